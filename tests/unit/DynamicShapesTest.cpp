//===- DynamicShapesTest.cpp - programs with `?` dims on the CPU --------===//
//
// One compiled program serves every size of a `?` dim (the kernel cache
// keys the shape class), runs check inputs against the shape class, and the
// disk cache keeps it (docs/dynamic-shapes.md).
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Backend.h"
#include "kiln/backend/Engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

// No default disk cache: compile counts mean what they say.
[[maybe_unused]] static const int kNoDiskCache = ::setenv("KILN_CACHE_DIR", "", 1);

namespace {
constexpr const char *kSoftmax = R"(
func.func @main(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = kiln.softmax %x {dim = 1} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
})";

HostTensor rows(int64_t count, int64_t cols) {
  HostTensor t(DType::F32, {count, cols});
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<float>()[i] = 0.01f * float(i % 97) - 0.3f * float(i % 5);
  return t;
}

std::unique_ptr<Engine> cpuEngine(DiskCacheConfig disk = {}) {
  auto engine = Engine::create({DeviceType::Cpu, 0}, std::move(disk));
  EXPECT_TRUE(engine) << engine.error().message;
  return std::move(*engine);
}
} // namespace

/// 200 row counts through one softmax program on `engine`'s device: one
/// compile, right answers at every size.
void sweepRowCounts(Engine *engine) {
  for (int64_t count = 0; count < 200; ++count) {
    // As a framework would: the program is asked for at every size.
    auto program = engine->compile(kSoftmax);
    ASSERT_TRUE(program) << program.error().message;
    HostTensor x = rows(count, 64);
    auto out = (*program)->run({x});
    ASSERT_TRUE(out) << out.error().message;
    ASSERT_EQ((*out)[0].shape, (std::vector<int64_t>{count, 64}));
    // Row `count - 1` sums to 1 and matches the reference.
    if (count == 0)
      continue;
    const float *in = x.as<float>() + (count - 1) * 64, *got = (*out)[0].as<float>() + (count - 1) * 64;
    double max = *std::max_element(in, in + 64), sum = 0;
    for (int j = 0; j < 64; ++j)
      sum += std::exp(double(in[j]) - max);
    for (int j = 0; j < 64; ++j)
      ASSERT_NEAR(got[j], std::exp(double(in[j]) - max) / sum, 1e-6) << count;
  }
  EXPECT_EQ(engine->compileCount(), 1u);
}

TEST(DynamicShapes, SweepOfRowCountsCompilesOnce) { sweepRowCounts(cpuEngine().get()); }

TEST(DynamicShapes, SweepOfRowCountsCompilesOnceOnVulkan) {
  // Kernels take the sizes as push constants (lavapipe in CI).
  auto engine = Engine::create({DeviceType::Vulkan, 0}, DiskCacheConfig{});
  if (!engine)
    GTEST_SKIP() << engine.error().message;
  sweepRowCounts(engine->get());
}

TEST(DynamicShapes, SignatureNamesRunTimeSizes) {
  auto engine = cpuEngine();
  auto program = engine->compile(R"(
func.func @main(%a: tensor<?x?xf32>, %b: tensor<?xf32>, %c: tensor<?x4xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %a, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  %1 = kiln.matmul %0, %c : (tensor<?x?xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %2 = kiln.reduce_sum %1 {dims = array<i64: 1>, keep_dims = true} : tensor<?x4xf32> -> tensor<?x1xf32>
  %3 = kiln.mul %0, %2 : (tensor<?x?xf32>, tensor<?x1xf32>) -> tensor<?x?xf32>
  return %3 : tensor<?x?xf32>
})");
  ASSERT_TRUE(program) << program.error().message;
  // a's dim 1, b's dim 0 and c's dim 0 are one size (broadcast, matmul K).
  const auto &in = (*program)->inputs();
  EXPECT_EQ(in[0].shape, (std::vector<int64_t>{dynamicDim(0), dynamicDim(1)}));
  EXPECT_EQ(in[1].shape, (std::vector<int64_t>{dynamicDim(1)}));
  EXPECT_EQ(in[2].shape, (std::vector<int64_t>{dynamicDim(1), 4}));
  EXPECT_EQ((*program)->outputs()[0].shape, (std::vector<int64_t>{dynamicDim(0), dynamicDim(1)}));
  auto bad = (*program)->run({rows(3, 5), HostTensor(DType::F32, {5}), rows(6, 4)});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(bad.error().message.find("input #2 dim 0 is 6 but input #0 dim 1 is 5"),
            std::string::npos)
      << bad.error().message;
}

TEST(DynamicShapes, DiskCacheKeepsTheShapeClass) {
  fs::path root = fs::temp_directory_path() / ("kiln-dynamic-" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    auto cold = cpuEngine({root, 0, false});
    ASSERT_TRUE(cold->compile(kSoftmax));
  }
  auto warm = cpuEngine({root, 0, false});
  auto program = warm->compile(kSoftmax);
  ASSERT_TRUE(program) << program.error().message;
  EXPECT_EQ(warm->compileCount(), 0u);
  EXPECT_EQ(warm->diskCacheHits(), 1u);
  for (int64_t count : {3, 17}) {
    auto out = (*program)->run({rows(count, 64)});
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{count, 64}));
  }
  fs::remove_all(root);
}

TEST(DynamicShapes, DeviceTensorRunsAreRefusedClearly) {
  auto backend = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(backend) << backend.error().message;
  auto x = (*backend)->upload(rows(2, 64));
  ASSERT_TRUE(x);
  auto out = (*backend)->run(kSoftmax, {*x});
  ASSERT_FALSE(out);
  EXPECT_EQ(out.error().kind, ErrorKind::Unsupported);
  EXPECT_NE(out.error().message.find("dynamic dims"), std::string::npos);
}
