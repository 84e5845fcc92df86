//===- DiskKernelCacheTest.cpp - engines sharing the disk kernel cache ---===//
//
// Each device kind that this machine has: a second engine (as a fresh
// process would) loads every program from the disk cache, compiling
// nothing and creating no MLIR context, and computes bit-identical
// results; bad entries are rebuilt; a program's entry depends on its own
// tuned configs alone. CUDA runs on the GPU machine and is
// skipped, visibly, elsewhere.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/TuneSpaces.h"
#include "kiln/backend/Engine.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <fstream>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

// Engines of every unit test use no disk cache but these tests' own, so
// that compile counts mean what they say, however the binary is run.
[[maybe_unused]] static const int kNoDefaultDiskCache = ::setenv("KILN_CACHE_DIR", "", 1);

namespace {
constexpr const char *kPrograms[] = {
    R"(func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = kiln.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.exp %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
})",
    R"(func.func @main(%a: tensor<8x8xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = kiln.matmul %a, %b : (tensor<8x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
})",
    R"(func.func @main(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = kiln.mul %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = kiln.reduce_max %0 {dims = array<i64: 1>} : tensor<4x8xf32> -> tensor<4xf32>
  return %1 : tensor<4xf32>
})",
};

HostTensor filled(std::vector<int64_t> shape, float seed) {
  HostTensor t(DType::F32, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = seed + 0.37f * float(i % 11) - 0.1f * float(i % 3);
  return t;
}

/// Inputs that fit `program`.
std::vector<HostTensor> inputsOf(const Program &program) {
  std::vector<HostTensor> inputs;
  for (const TensorSignature &s : program.inputs())
    inputs.push_back(filled(s.shape, float(inputs.size())));
  return inputs;
}

class DiskKernelCacheTest : public testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    device = *DeviceId::parse(GetParam());
    if (targetKind(device.type).deviceCount() == 0)
      GTEST_SKIP() << GetParam() << ": no such device on this machine";
    root = fs::temp_directory_path() /
           ("kiln-disk-kernel-cache-" + std::string(GetParam()).substr(0, 3) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(root);
  }
  void TearDown() override { fs::remove_all(root); }
  std::unique_ptr<Engine> engine() {
    auto created = Engine::create(device, {root, 0, false});
    EXPECT_TRUE(created) << created.error().message;
    return created ? std::move(*created) : nullptr;
  }
  /// Runs every program on `e`; their results' bytes.
  std::vector<decltype(HostTensor::data)> runAll(Engine &e) {
    std::vector<decltype(HostTensor::data)> results;
    for (const char *source : kPrograms) {
      auto program = e.compile(source);
      EXPECT_TRUE(program) << program.error().message;
      if (!program)
        return {};
      auto out = (*program)->run(inputsOf(**program));
      EXPECT_TRUE(out) << out.error().message;
      if (out)
        results.push_back(out->at(0).data);
    }
    return results;
  }
  /// Every program's tune keys and untuned configs as `e` compiles it.
  std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>
  tuningOfAll(Engine &e) {
    std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>> out;
    for (const char *source : kPrograms)
      if (auto program = e.compile(source))
        out.emplace_back((*program)->tuneKeys(), (*program)->untunedConfigs());
    return out;
  }
  std::vector<fs::path> entryFiles() {
    std::vector<fs::path> files;
    for (const auto &f : fs::recursive_directory_iterator(root))
      if (f.path().extension() == kCacheEntrySuffix)
        files.push_back(f.path());
    return files;
  }
  DeviceId device;
  fs::path root;
};
} // namespace

TEST_P(DiskKernelCacheTest, SecondEngineCompilesNothingAndCreatesNoMlirContext) {
  auto cold = engine();
  auto want = runAll(*cold);
  ASSERT_EQ(want.size(), std::size(kPrograms));
  EXPECT_EQ(cold->compileCount(), std::size(kPrograms));
  // One entry per program, one alias per program text; a program with tune
  // keys also aliases its IR and its text with its configs.
  auto tuning = tuningOfAll(*cold);
  ASSERT_EQ(tuning.size(), std::size(kPrograms));
  size_t tunable = std::ranges::count_if(tuning, [](auto &t) { return !t.first.empty(); });
  EXPECT_EQ(entryFiles().size(), 2 * std::size(kPrograms) + 2 * tunable);

  size_t contexts = Engine::mlirContextsCreated();
  auto warm = engine();
  EXPECT_EQ(runAll(*warm), want) << "results differ from the cold run's";
  EXPECT_EQ(warm->compileCount(), 0u);
  EXPECT_EQ(warm->diskCacheHits(), std::size(kPrograms));
  EXPECT_EQ(Engine::mlirContextsCreated(), contexts);
  // What the tuner asks of a program survives the disk: its tune keys (the
  // matmul's) and, where a pass chose by the shape (CUDA's matmul), the
  // untuned choice it times first.
  EXPECT_FALSE(tuning[1].first.empty());
  EXPECT_EQ(tuningOfAll(*warm), tuning);
  if (device.type == DeviceType::Cuda)
    EXPECT_EQ(tuning[1].second.size(), 1u);
}

TEST_P(DiskKernelCacheTest, AProgramsEntryDependsOnItsOwnTunedConfigsAlone) {
  const char *matmul = kPrograms[1];
  auto cold = engine();
  auto untuned = cold->compileAsGiven(matmul, {});
  ASSERT_TRUE(untuned) << untuned.error().message;
  ASSERT_EQ((*untuned)->tuneKeys().size(), 1u);
  const std::string key = (*untuned)->tuneKeys()[0];
  const std::vector<TuneSpace> spaces = kernelTuneSpaces();
  const TuneSpace *space = nullptr;
  for (const TuneSpace &s : spaces)
    if (key.starts_with(s.name + "@"))
      space = &s;
  ASSERT_TRUE(space && space->candidates.size() > 1) << key;
  // Another kernel's tuned config: the entry stays (it used to miss).
  CompileOptions other, tuned;
  other.tuned["cpu.matmul@" + CpuMatmulTunables::tuneSpace().hash() + ":matmul:f32,f32,f32:1x1x1"] =
      TuneSpace::configText(CpuMatmulTunables::tuneSpace().candidates[1]);
  ASSERT_FALSE(other.tuned.count(key));
  auto warm = engine();
  ASSERT_TRUE(warm->compileAsGiven(matmul, other));
  EXPECT_EQ(warm->compileCount(), 0u);
  EXPECT_EQ(warm->diskCacheHits(), 1u);
  // Its own key tuned: compiled, and the untuned entry is still served to
  // a table without it, from its own file.
  tuned.tuned[key] = TuneSpace::configText(space->candidates[1]);
  ASSERT_TRUE(warm->compileAsGiven(matmul, tuned));
  EXPECT_EQ(warm->compileCount(), 1u);
  // No program text reads as another text's key with configs (the
  // configs precede the program in a key).
  auto forged = warm->compileAsGiven(
      std::string(matmul) + "\ntuned=" + tuned.tunedConfigsText({key}), tuned);
  EXPECT_FALSE(forged) << "a forged program text hit the tuned program's entry";
  for (const CompileOptions &options : {tuned, CompileOptions{}}) {
    auto again = engine();
    ASSERT_TRUE(again->compileAsGiven(matmul, options));
    EXPECT_EQ(again->compileCount(), 0u);
  }
  // The text's alias now names the entry last used: the untuned one's.
  size_t renamed = 0;
  for (const fs::path &file : entryFiles()) {
    auto entry = verifyCacheFile(file);
    if (entry && entry->key.ends_with("\nprogram=" + std::string(matmul) + "\n") &&
        entry->key.find("\ntuned=") == std::string::npos)
      renamed += entry->metadata.find("tuned=" + key + "=;") != std::string::npos;
  }
  EXPECT_EQ(renamed, 1u);
  // Without the untuned entry's file, a table without the key compiles
  // again (the tuned entry, which the aliases name last, is never served).
  size_t removed = 0;
  for (const fs::path &file : entryFiles()) {
    auto entry = verifyCacheFile(file);
    if (entry && entry->key.find("\ntuned=" + key + "=;\n") != std::string::npos &&
        entry->metadata.find("\"alias_of\"") == std::string::npos)
      removed += fs::remove(file);
  }
  EXPECT_EQ(removed, 1u);
  auto rebuilt = engine();
  ASSERT_TRUE(rebuilt->compileAsGiven(matmul, {}));
  EXPECT_EQ(rebuilt->compileCount(), 1u);
}

TEST_P(DiskKernelCacheTest, ReformattedTextHitsTheCanonicalEntry) {
  auto cold = engine();
  ASSERT_TRUE(cold->compile(kPrograms[0]));
  std::string reformatted = std::string("// the same program\n") + kPrograms[0];
  auto warm = engine();
  ASSERT_TRUE(warm->compile(reformatted));
  EXPECT_EQ(warm->compileCount(), 0u);
  EXPECT_EQ(warm->diskCacheHits(), 1u);
  // It left an alias for its text: the next engine needs no MLIR for it.
  size_t contexts = Engine::mlirContextsCreated();
  auto third = engine();
  ASSERT_TRUE(third->compile(reformatted));
  EXPECT_EQ(third->diskCacheHits(), 1u);
  EXPECT_EQ(Engine::mlirContextsCreated(), contexts);
}

TEST_P(DiskKernelCacheTest, CorruptEntriesAreRebuiltAndResultsStayRight) {
  auto cold = engine();
  auto want = runAll(*cold);
  ASSERT_EQ(want.size(), std::size(kPrograms));
  for (const fs::path &file : entryFiles()) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(file) - 5));
    f.put('\x5a');
  }
  auto rebuilt = engine();
  testing::internal::CaptureStderr();
  auto results = runAll(*rebuilt);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(results, want);
  EXPECT_EQ(rebuilt->compileCount(), std::size(kPrograms));
  EXPECT_NE(log.find("digest mismatch"), std::string::npos) << log;
  auto warm = engine();
  EXPECT_EQ(runAll(*warm), want);
  EXPECT_EQ(warm->compileCount(), 0u);
}

TEST_P(DiskKernelCacheTest, OffWhenTheDirectoryIsEmpty) {
  auto created = Engine::create(device, {"", 0, false});
  ASSERT_TRUE(created);
  ASSERT_TRUE((*created)->compile(kPrograms[0]));
  EXPECT_EQ((*created)->compileCount(), 1u);
  EXPECT_FALSE(fs::exists(root));
}

INSTANTIATE_TEST_SUITE_P(Devices, DiskKernelCacheTest,
                         testing::Values("cpu", "vulkan", "cuda"),
                         [](const auto &info) { return std::string(info.param); });
