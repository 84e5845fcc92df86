//===- AutotuneTest.cpp - tune files, tune keys and the tuner -------------===//
#include "kiln/Lowering/TuneSpaces.h"
#include "kiln/backend/Autotune.h"
#include "kiln/backend/Backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <unistd.h>

using namespace kiln;
namespace fs = std::filesystem;

namespace {

TuneEntry entryFor(const TuneSpace &space, std::vector<int64_t> shape, size_t bestIndex) {
  TuneEntry e{{space.name, space.hash(), "matmul", {"f32", "f32", "f32"}, std::move(shape)},
              space.params, space.candidates.at(bestIndex), {}};
  for (size_t i = 0; i < space.candidates.size(); ++i)
    e.timings.push_back({space.candidates[i], 1.0 + double(i), 0.01});
  return e;
}

fs::path freshDirectory(const std::string &name) {
  fs::path dir = fs::temp_directory_path() /
                 ("kiln-autotune-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void writeText(const fs::path &file, const std::string &text) { std::ofstream(file) << text; }

/// Leaves the process's tuner as the unit tests expect it: cached, no files.
struct TunerReset {
  ~TunerReset() { Autotuner::instance().configure({}); }
};

TEST(Autotune, AnchorsShapesToPowersOfTwo) {
  EXPECT_EQ(anchorToPowerOfTwo(1), 1);
  EXPECT_EQ(anchorToPowerOfTwo(1000), 1024);
  EXPECT_EQ(anchorToPowerOfTwo(3000), 4096); // log2 3000 = 11.55
  EXPECT_EQ(anchorToPowerOfTwo(257), 256);
  EXPECT_EQ(anchorToPowerOfTwo(4096), 4096);
}

TEST(Autotune, KeyTextRoundTrips) {
  TuneKey key{"cuda.matmul.mma", "0123456789abcdef", "matmul", {"bf16", "bf16", "f32"},
              {8192, 8192, 8192}};
  EXPECT_EQ(key.text(), "cuda.matmul.mma@0123456789abcdef:matmul:bf16,bf16,f32:8192x8192x8192");
  EXPECT_EQ(TuneKey::parse(key.text()), key);
  EXPECT_FALSE(TuneKey::parse("no-template:matmul:f32"));
}

TEST(Autotune, ACandidateReplacesTheUntunedChoiceOnlyBeyondTheNoise) {
  TuneWinner winner{0.03};
  EXPECT_TRUE(winner.offer(0, 1.00)); // the untuned choice, timed first
  EXPECT_FALSE(winner.offer(1, 0.98)); // 2% faster: noise, untuned stays
  EXPECT_EQ(winner.best, 0u);
  EXPECT_TRUE(winner.offer(2, 0.96)); // 4% faster
  EXPECT_FALSE(winner.offer(3, 0.965));
  EXPECT_TRUE(winner.offer(4, 0.959)); // past the untuned choice, the fastest wins
  EXPECT_EQ(winner.best, 4u);
  TuneWinner withoutUntuned{0.03}; // its compile failed: no margin for the next
  EXPECT_TRUE(withoutUntuned.offer(1, 1.0));
  EXPECT_TRUE(withoutUntuned.offer(2, 0.99));
}

TEST(Autotune, EveryTemplateDeclaresItsDefaultFirst) {
  for (const TuneSpace &s : kernelTuneSpaces()) {
    ASSERT_FALSE(s.candidates.empty()) << s.name;
    for (const auto &c : s.candidates)
      EXPECT_EQ(c.size(), s.params.size()) << s.name;
    EXPECT_EQ(s.hash().size(), 16u);
  }
  EXPECT_EQ(CudaMmaMatmulTunables::tuneSpace().candidates.front(),
            (std::vector<int64_t>{256, 2, 128}));
  EXPECT_EQ(CpuMatmulTunables::fromConfig(CpuMatmulTunables::tuneSpace().candidates.front()).rows,
            CpuMatmulTunables{}.rows);
}

// The untuned tilings chosen by the shape are candidates, so that the
// tuner can time them first (kiln.untuned): CUDA's SIMT matmul on a GPU of
// 132 SMs, Vulkan's cooperative one on subgroups of 32 and 64.
TEST(Autotune, EveryUntunedTilingChosenByTheShapeIsACandidate) {
  const std::vector<int64_t> sizes = {1, 16, 32, 33, 64, 100, 128, 257, 1000, 1024,
                                      2048, 3000, 4096, 11008};
  auto simt = GpuSimtMatmulTunables::tuneSpace().candidates;
  auto coop = VulkanCoopMatmulTunables::tuneSpace().candidates;
  for (int64_t batch : {1, 8})
    for (int64_t m : sizes)
      for (int64_t n : sizes) {
        for (int64_t k : sizes) {
          auto t = GpuSimtMatmulTunables::forOutput(batch, m, n, k, 132);
          EXPECT_TRUE(std::ranges::find(simt, t.config()) != simt.end())
              << batch << "x" << m << "x" << n << "x" << k << ": "
              << TuneSpace::configText(t.config());
        }
        for (int64_t subgroup : {32, 64}) {
          auto t = VulkanCoopMatmulTunables::forOutput({16, 16, 16, subgroup}, batch, m, n);
          ASSERT_TRUE(t);
          EXPECT_TRUE(std::ranges::find(coop, t->config()) != coop.end())
              << batch << "x" << m << "x" << n << ": " << TuneSpace::configText(t->config());
        }
      }
}

// The untuned SIMT tiling on a GPU of 132 SMs is what kiln-tune found
// fastest on the H100 (docs/cuda.md, session 33): 128 x 128 tiles with K
// cut into the parts that fill whole waves, where that fills most of them.
TEST(Autotune, UntunedSimtTilingFillsWholeWaves) {
  struct Case {
    int64_t batch, m, n, k;
    GpuSimtMatmulTunables want;
  };
  const Case cases[] = {
      {1, 1024, 1024, 1024, {128, 16, 8, 2}}, {1, 1000, 1000, 1000, {128, 16, 8, 2}},
      {1, 128, 11008, 4096, {128, 16, 8, 3}}, {1, 4096, 128, 4096, {128, 16, 8, 4}},
      {1, 128, 4096, 11008, {128, 16, 8, 4}}, {1, 512, 1024, 8192, {128, 16, 8, 4}},
      {1, 16, 4096, 4096, {32, 8, 4, 8}},     {1, 3000, 257, 511, GpuSimtMatmulTunables::narrow()},
      {1, 4096, 4096, 4096, {}},              {8, 1024, 1024, 1024, {}},
      // 100 blocks of 128 x 128 alone fill 3/4 of the SMs: narrow() tiles,
      // as before parts of K on them were candidates.
      {1, 1280, 1280, 1024, GpuSimtMatmulTunables::narrow()}};
  for (const Case &c : cases)
    EXPECT_EQ(GpuSimtMatmulTunables::forOutput(c.batch, c.m, c.n, c.k, 132).config(),
              c.want.config())
        << c.batch << "x" << c.m << "x" << c.n << "x" << c.k;
  // Where the default's tiles do not fit the device, the narrow rules.
  EXPECT_EQ(GpuSimtMatmulTunables::forOutput(1, 1024, 1024, 1024, 132, false).config(),
            GpuSimtMatmulTunables::narrow().config());
}

TEST(Autotune, DatabaseRoundTripsThroughJson) {
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  TuneDatabase db("cpu-test");
  db.builtBy = "build-1";
  db.insert(entryFor(space, {64, 64, 64}, 1));
  auto back = TuneDatabase::parse(db.toJson(), "t.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->device(), "cpu-test");
  ASSERT_EQ(back->entries().size(), 1u);
  EXPECT_EQ(back->entries()[0].best, space.candidates[1]);
  EXPECT_EQ(back->entries()[0].timings.size(), space.candidates.size());
  EXPECT_NE(db.toJson().find("\"best\":{\"rows\":4,\"vectors_per_row\":0,\"k_block\":256,"),
            std::string::npos)
      << db.toJson();
  TuneTable table = back->table({space});
  EXPECT_EQ(table.at(back->entries()[0].key.text()), TuneSpace::configText(space.candidates[1]));
}

// JSON objects are unordered: a hand-written entry may name its parameters
// in any order (its timings too), and is used as the template's (it was
// silently ignored); other names are an error naming the file and line.
TEST(Autotune, ParametersInAnyOrderAreTheTemplates) {
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  std::string entry =
      "{\"template\":\"cpu.matmul\",\"candidates\":\"" + space.hash() +
      "\",\"key\":{\"op\":\"matmul\",\"dtypes\":[\"f32\",\"f32\",\"f32\"],"
      "\"shape\":[64,64,64]},\"best\":{\"block_cols\":384,\"block_rows\":64,"
      "\"k_block\":256,\"vectors_per_row\":3,\"rows\":4},\"timings_ms\":[{\"config\":"
      "{\"rows\":4,\"vectors_per_row\":3,\"k_block\":256,\"block_rows\":64,"
      "\"block_cols\":384},\"median\":1.0,\"spread\":0.1}]}";
  auto db = TuneDatabase::parse(
      "{\"format\": 1, \"device\": \"cpu-test\",\n \"entries\": [\n  " + entry + "\n]}\n",
      "hand.json");
  ASSERT_TRUE(db) << db.error().message;
  TuneTable table = db->table({space});
  ASSERT_EQ(table.size(), 1u);
  EXPECT_EQ(table.begin()->second, "4x3x256x64x384");
  std::string renamed = entry;
  renamed.replace(renamed.find("\"rows\":4},"), 10, "\"cols\":4},");
  auto broken = TuneDatabase::parse(
      "{\"format\": 1, \"device\": \"cpu-test\",\n \"entries\": [\n  " + renamed + "\n]}\n",
      "hand.json");
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("hand.json:3:"), std::string::npos)
      << broken.error().message;
  EXPECT_NE(broken.error().message.find("names other parameters"), std::string::npos)
      << broken.error().message;
}

TEST(Autotune, ChangedCandidateListInvalidatesEntries) {
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  TuneDatabase db("cpu-test");
  db.insert(entryFor(space, {64, 64, 64}, 1));
  TuneSpace changed = space;
  changed.candidates.push_back({2, 2});
  ASSERT_NE(changed.hash(), space.hash());
  EXPECT_TRUE(db.table({changed}).empty());
  EXPECT_EQ(db.table({space}).size(), 1u);
}

TEST(Autotune, SyntaxErrorNamesFileAndLine) {
  std::string text = "{\"format\": 1,\n \"device\": \"cpu-test\",\n \"entries\": [,]}\n";
  auto db = TuneDatabase::parse(text, "broken.json");
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(db.error().message.find("broken.json:3:"), std::string::npos) << db.error().message;
}

// nlohmann's parser throws out_of_range, not parse_error, for a number no
// JSON type holds (found by fuzz-tune-file): still an error naming the file.
TEST(Autotune, NumberTooLargeIsAnErrorNotACrash) {
  auto db = TuneDatabase::parse("{\"format\": 13e57069}", "huge.json");
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, ErrorKind::InvalidArgument);
  EXPECT_EQ(db.error().message.rfind("huge.json:1:", 0), 0u) << db.error().message;
}

TEST(Autotune, HandBrokenEntryNamesFileAndLine) {
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  TuneDatabase db("cpu-test");
  db.insert(entryFor(space, {64, 64, 64}, 0));
  db.insert(entryFor(space, {128, 128, 128}, 0));
  std::string text = db.toJson();
  // The second entry (line 4 of the file) loses its "best".
  size_t second = text.find("\"template\"", text.find("\"template\"") + 1);
  size_t best = text.find("\"best\"", second);
  text.replace(best, 6, "\"bust\"");
  auto back = TuneDatabase::parse(text, "hand.json");
  ASSERT_FALSE(back);
  EXPECT_NE(back.error().message.find("hand.json:4: bad tune file: entry #1: \"best\" is missing"),
            std::string::npos)
      << back.error().message;
}

TEST(Autotune, WriteMergesWithWhatAnotherWriterWrote) {
  TunerReset reset;
  fs::path dir = freshDirectory("merge");
  fs::path file = dir / "cpu-test.json";
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  TuneDatabase first("cpu-test"), second("cpu-test");
  first.insert(entryFor(space, {64, 64, 64}, 1));
  second.insert(entryFor(space, {128, 128, 128}, 2));
  ASSERT_TRUE(first.write(file));
  ASSERT_TRUE(second.write(file)); // knows nothing of `first`'s entry
  auto both = TuneDatabase::read(file);
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_EQ(both->entries().size(), 2u);
  for (const auto &entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
  fs::remove_all(dir);
}

TEST(Autotune, WriteKeepsTheFilesEntriesOnAskingAndNeverReplacesABrokenFile) {
  TunerReset reset;
  fs::path dir = freshDirectory("keep");
  fs::path file = dir / "cpu-test.json";
  TuneSpace space = CpuMatmulTunables::tuneSpace();
  TuneDatabase there("cpu-test"), incoming("cpu-test");
  there.insert(entryFor(space, {64, 64, 64}, 1));
  incoming.insert(entryFor(space, {64, 64, 64}, 2));
  incoming.insert(entryFor(space, {128, 128, 128}, 2));
  ASSERT_TRUE(there.write(file));
  ASSERT_TRUE(incoming.write(file, TuneDatabase::OnSameKey::Keep));
  auto kept = TuneDatabase::read(file);
  ASSERT_TRUE(kept) << kept.error().message;
  ASSERT_EQ(kept->entries().size(), 2u);
  EXPECT_EQ(kept->find(there.entries()[0].key)->best, there.entries()[0].best);
  ASSERT_TRUE(incoming.write(file));
  EXPECT_EQ(TuneDatabase::read(file)->find(there.entries()[0].key)->best,
            incoming.entries()[0].best);
  // A hand-broken file is the user's to fix: an error naming it, untouched.
  writeText(file, "{\"format\": 1,\n oops\n");
  for (auto onSameKey : {TuneDatabase::OnSameKey::Replace, TuneDatabase::OnSameKey::Keep}) {
    auto refused = incoming.write(file, onSameKey);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find(file.string() + ":2:"), std::string::npos)
        << refused.error().message;
    EXPECT_NE(refused.error().message.find("not replaced"), std::string::npos);
  }
  std::ifstream in(file);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"format\": 1,\n oops\n");
  fs::remove_all(dir);
}

/// A 24x40 by 40xN matmul; a test that needs a kernel no other test has
/// compiled or tuned in this process (or left in the disk cache) takes its
/// own N.
std::string matmulProgram(int64_t n) {
  std::string b = "tensor<40x" + std::to_string(n) + "xf32>";
  std::string c = "tensor<24x" + std::to_string(n) + "xf32>";
  return "func.func @main(%a: tensor<24x40xf32>, %b: " + b + ") -> " + c + " {\n" +
         "  %0 = kiln.matmul %a, %b : (tensor<24x40xf32>, " + b + ") -> " + c + "\n" +
         "  return %0 : " + c + "\n}";
}
const std::string kMatmul = matmulProgram(48);

std::vector<float> runMatmul(Backend &backend, const CompileOptions &options = {},
                             int64_t n = 48) {
  HostTensor a(DType::F32, {24, 40}), b(DType::F32, {40, n});
  for (int64_t i = 0; i < a.numElements(); ++i)
    a.as<float>()[i] = float(i % 7) - 3;
  for (int64_t i = 0; i < b.numElements(); ++i)
    b.as<float>()[i] = float(i % 5) - 2;
  auto ta = backend.upload(a), tb = backend.upload(b);
  EXPECT_TRUE(ta && tb);
  auto out = backend.run(matmulProgram(n), {*ta, *tb}, options);
  EXPECT_TRUE(out) << out.error().message;
  auto host = backend.download(out->front());
  EXPECT_TRUE(host);
  return std::vector<float>(host->as<float>(), host->as<float>() + host->numElements());
}

TEST(Autotune, ForcedConfigChangesTheCodeNotTheResult) {
  TunerReset reset;
  auto backend = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(backend);
  std::unique_ptr<Compiler> compiler = createCompiler();
  auto plain = compiler->compileForCpu(kMatmul, {});
  ASSERT_TRUE(plain) << plain.error().message;
  ASSERT_EQ(plain->tuneKeys.size(), 1u);
  const std::string &key = plain->tuneKeys[0];
  EXPECT_EQ(key.rfind("cpu.matmul@" + CpuMatmulTunables::tuneSpace().hash() +
                          ":matmul:f32,f32,f32:32x64x32", 0),
            0u)
      << key;
  CompileOptions forced;
  forced.tuned[key] = "4x3x256x64x384";
  auto tuned = compiler->compileForCpu(kMatmul, forced);
  ASSERT_TRUE(tuned) << tuned.error().message;
  EXPECT_NE(plain->object, tuned->object);
  EXPECT_NE(CompileOptions{}.tuneTableKey(), forced.tuneTableKey());
  EXPECT_NE(CompileOptions{}.tunedConfigsText({key}), forced.tunedConfigsText({key}));
  EXPECT_EQ(runMatmul(**backend), runMatmul(**backend, forced));
}

/// Runs an m x k by k x n matmul of `input` elements (f32 sums) under each
/// candidate of `space` forced through its tune key and expects the exact
/// sums of small integers. Candidates the device cannot run are compile
/// errors ("does not fit") and skipped.
void expectEveryTilingExact(Backend &backend, const TuneSpace &space, DType input, int64_t m,
                            int64_t n, int64_t k) {
  const bool half = input == DType::F16;
  const std::string name = half ? "f16" : "f32";
  HostTensor a(input, {m, k}), b(input, {k, n});
  std::vector<float> af(m * k), bf(k * n), expected(m * n, 0.0f);
  auto set = [&](HostTensor &t, int64_t i, float v) {
    if (half)
      t.as<uint16_t>()[i] = floatToHalf(v);
    else
      t.as<float>()[i] = v;
  };
  for (int64_t i = 0; i < m * k; ++i)
    set(a, i, af[i] = float(i % 7) - 3);
  for (int64_t i = 0; i < k * n; ++i)
    set(b, i, bf[i] = float(i % 5) - 2);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        expected[i * n + j] += af[i * k + kk] * bf[kk * n + j];
  auto tensor = [&](int64_t r, int64_t c, const std::string &e) {
    return "tensor<" + std::to_string(r) + "x" + std::to_string(c) + "x" + e + ">";
  };
  const std::string ta = tensor(m, k, name), tb = tensor(k, n, name), tc = tensor(m, n, "f32");
  const std::string program = "func.func @main(%a: " + ta + ", %b: " + tb + ") -> " + tc +
                              " {\n  %0 = kiln.matmul %a, %b : (" + ta + ", " + tb + ") -> " +
                              tc + "\n  return %0 : " + tc + "\n}";
  auto da = backend.upload(a), db = backend.upload(b);
  ASSERT_TRUE(da && db);
  std::string key = TuneKey{space.name, space.hash(), "matmul", {name, name, "f32"},
                            {anchorToPowerOfTwo(m), anchorToPowerOfTwo(n), anchorToPowerOfTwo(k)}}
                        .text();
  for (const std::vector<int64_t> &config : space.candidates) {
    CompileOptions options;
    options.tuned[key] = TuneSpace::configText(config);
    // The tiling was asked for by the kernel's key (a wrong key would leave
    // every run on the default) and fits the device (else an error).
    auto compiled = backend.kernels().compile(program, options);
    if (!compiled && compiled.error().message.find("does not fit") != std::string::npos)
      continue; // a tiling this device cannot run (subgroups of 64, ...)
    ASSERT_TRUE(compiled) << options.tuned[key] << ": " << compiled.error().message;
    const std::vector<std::string> &keys = compiled->get()->tuneKeys();
    ASSERT_NE(std::find(keys.begin(), keys.end(), key), keys.end()) << key;
    auto out = backend.run(program, {*da, *db}, options);
    ASSERT_TRUE(out) << options.tuned[key] << ": " << out.error().message;
    auto host = backend.download(out->front());
    ASSERT_TRUE(host);
    EXPECT_EQ(std::vector<float>(host->as<float>(), host->as<float>() + m * n), expected)
        << "tiling " << options.tuned[key];
  }
}

// Every tiling the tuner may pick for Vulkan's cooperative-matrix matmul
// gives the exact sums at the M, N and K edges of its tiles: 200 x 72 by
// 72 x 264. Runs where a Vulkan device has f16 x f16 -> f32 cooperative
// matrices (the H200's driver: every candidate fits; not lavapipe).
TEST(Autotune, EveryVulkanCooperativeMatmulTilingIsExact) {
  if (Backend::deviceCount(DeviceType::Vulkan) == 0)
    GTEST_SKIP() << "no Vulkan device";
  auto backend = Backend::create({DeviceType::Vulkan, 0});
  ASSERT_TRUE(backend) << backend.error().message;
  auto mma = (*backend)->kernels().capabilities().mma;
  if (std::none_of(mma.begin(), mma.end(), [](const MmaConfig &c) {
        return c.a == ElementType::F16 && c.cd == ElementType::F32;
      }))
    GTEST_SKIP() << (*backend)->name() << " has no f16 x f16 -> f32 cooperative matrices";
  expectEveryTilingExact(**backend, VulkanCoopMatmulTunables::tuneSpace(), DType::F16, 200, 264,
                         72);
}

// The same for the SIMT kernel on each GPU target (f32 without tf32; on
// Vulkan every f32 matmul), K long enough that every split candidate
// splits it (600: 38 or 75 steps) and C's rows odd (the adding kernel's
// pairs split).
TEST(Autotune, EverySimtMatmulTilingIsExact) {
  int devices = 0;
  for (DeviceType type : {DeviceType::Cuda, DeviceType::Vulkan}) {
    if (Backend::deviceCount(type) == 0)
      continue;
    ++devices;
    auto backend = Backend::create({type, 0});
    ASSERT_TRUE(backend) << backend.error().message;
    SCOPED_TRACE((*backend)->name());
    expectEveryTilingExact(**backend, GpuSimtMatmulTunables::tuneSpace(), DType::F32, 200, 263,
                           600);
  }
  if (devices == 0)
    GTEST_SKIP() << "no CUDA or Vulkan device";
}

/// `v` rounded to bf16 (to nearest, ties to even), as its bits.
uint16_t floatToBf16(float v) {
  uint32_t bits = std::bit_cast<uint32_t>(v);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

// Every block shape the tuner may pick for the CPU's attention gives the
// float64 reference's result at the edges of its blocks: 2 heads of 37
// query rows over 45 keys (rows and keys left over by every shape), head
// dim 16, causal; in f32, and in bf16 (on hosts with AVX512-BF16 the
// dot products of pairs, whose last span of keys runs whole), where the
// probabilities and the output are rounded to bf16.
TEST(Autotune, EveryCpuAttentionBlockIsRight) {
  auto backend = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(backend) << backend.error().message;
  const int64_t heads = 2, rows = 37, keys = 45, depth = 16;
  const float scale = 0.25f;
  for (DType dtype : {DType::F32, DType::BF16}) {
    const bool bf16 = dtype == DType::BF16;
    const std::string name = bf16 ? "bf16" : "f32";
    SCOPED_TRACE(name);
    HostTensor q(dtype, {heads, rows, depth}), k(dtype, {heads, keys, depth}),
        v(dtype, {heads, keys, depth});
    // The inputs' values as the kernel sees them.
    std::vector<double> qd, kd, vd;
    for (HostTensor *t : {&q, &k, &v}) {
      std::vector<double> &values = t == &q ? qd : t == &k ? kd : vd;
      for (int64_t i = 0; i < t->numElements(); ++i) {
        float x = float(std::sin(0.7 * double(i) + double(t == &k) + 2.0 * (t == &v)));
        if (bf16) {
          t->as<uint16_t>()[i] = floatToBf16(x);
          x = std::bit_cast<float>(uint32_t(t->as<uint16_t>()[i]) << 16);
        } else {
          t->as<float>()[i] = x;
        }
        values.push_back(x);
      }
    }
    std::vector<double> expected(heads * rows * depth, 0.0);
    for (int64_t n = 0; n < heads; ++n)
      for (int64_t i = 0; i < rows; ++i) {
        std::vector<double> s(i + 1);
        double m = -INFINITY, total = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < depth; ++d)
            dot += qd[(n * rows + i) * depth + d] * kd[(n * keys + j) * depth + d];
          m = std::max(m, s[j] = dot * scale);
        }
        for (int64_t j = 0; j <= i; ++j)
          total += s[j] = std::exp(s[j] - m);
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t d = 0; d < depth; ++d)
            expected[(n * rows + i) * depth + d] += s[j] / total * vd[(n * keys + j) * depth + d];
      }
    auto type = [&](int64_t length) {
      return "tensor<" + std::to_string(heads) + "x" + std::to_string(length) + "x" +
             std::to_string(depth) + "x" + name + ">";
    };
    const std::string tq = type(rows), tk = type(keys);
    const std::string program = "func.func @main(%q: " + tq + ", %k: " + tk + ", %v: " + tk +
                                ") -> " + tq + " {\n  %0 = kiln.attention %q, %k, %v {causal = " +
                                "true, scale = 0.25 : f64} : (" + tq + ", " + tk + ", " + tk +
                                ") -> " + tq + "\n  return %0 : " + tq + "\n}";
    auto dq = (*backend)->upload(q), dk = (*backend)->upload(k), dv = (*backend)->upload(v);
    ASSERT_TRUE(dq && dk && dv);
    const TuneSpace space = CpuAttentionTunables::tuneSpace();
    const std::string key = TuneKey{space.name,
                                    space.hash(),
                                    "attention",
                                    {name},
                                    {anchorToPowerOfTwo(heads), anchorToPowerOfTwo(rows),
                                     anchorToPowerOfTwo(keys), anchorToPowerOfTwo(depth),
                                     anchorToPowerOfTwo(depth)}}
                                .text();
    for (const std::vector<int64_t> &config : space.candidates) {
      CompileOptions options;
      options.tuned[key] = TuneSpace::configText(config);
      auto compiled = (*backend)->kernels().compile(program, options);
      ASSERT_TRUE(compiled) << options.tuned[key] << ": " << compiled.error().message;
      const std::vector<std::string> &tuneKeys = compiled->get()->tuneKeys();
      ASSERT_NE(std::find(tuneKeys.begin(), tuneKeys.end(), key), tuneKeys.end()) << key;
      auto out = (*backend)->run(program, {*dq, *dk, *dv}, options);
      ASSERT_TRUE(out) << options.tuned[key] << ": " << out.error().message;
      auto host = (*backend)->download(out->front());
      ASSERT_TRUE(host);
      for (size_t i = 0; i < expected.size(); ++i) {
        double got = bf16 ? double(std::bit_cast<float>(uint32_t(host->as<uint16_t>()[i]) << 16))
                          : double(host->as<float>()[i]);
        ASSERT_NEAR(got, expected[i], bf16 ? 1e-2 : 1e-5)
            << "blocks " << options.tuned[key] << ", element " << i;
      }
    }
  }
}

TEST(Autotune, OnTunesOnceThenReusesAndCachedNeverBenchmarks) {
  TunerReset reset;
  constexpr int64_t kOwnN = 56; // tuned here only
  fs::path dir = freshDirectory("on");
  AutotuneConfig config;
  config.mode = AutotuneMode::On;
  config.budgetMs = 50;
  config.directory = dir;
  Autotuner::instance().configure(config);
  auto backend = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(backend);
  std::vector<float> expected = runMatmul(**backend, {.tuned = {{"none", "none"}}}, kOwnN);
  size_t before = Autotuner::benchmarksRun();
  EXPECT_EQ(runMatmul(**backend, {}, kOwnN), expected);
  EXPECT_GE(Autotuner::benchmarksRun(), before + 1);
  fs::path file = tuneFileOf(dir, (*backend)->kernels().target().fingerprint());
  auto written = TuneDatabase::read(file);
  ASSERT_TRUE(written) << written.error().message;
  EXPECT_EQ(written->entries().size(), 1u);
  size_t tuned = Autotuner::benchmarksRun();
  EXPECT_EQ(runMatmul(**backend, {}, kOwnN), expected);
  EXPECT_EQ(Autotuner::benchmarksRun(), tuned);

  // A fresh process (configure forgets what was loaded) in the default
  // mode reads the file and benchmarks nothing.
  config.mode = AutotuneMode::Cached;
  Autotuner::instance().configure(config);
  auto fresh = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(fresh);
  size_t hits = Autotuner::tunedLookupHits();
  EXPECT_EQ(runMatmul(**fresh, {}, kOwnN), expected);
  EXPECT_EQ(Autotuner::benchmarksRun(), tuned);
  EXPECT_EQ(Autotuner::tunedLookupHits(), hits + 1);
  fs::remove_all(dir);
}

TEST(Autotune, BrokenTuneFileIsReportedAndDefaultsRun) {
  TunerReset reset;
  fs::path dir = freshDirectory("broken");
  writeText(dir / "shipped.json", "{\"format\": 1, \"device\": \"x\",\n \"entries\": [}\n");
  AutotuneConfig config;
  config.shippedFiles = {dir / "shipped.json"};
  Autotuner::instance().configure(config);
  auto backend = Backend::create({DeviceType::Cpu, 0});
  ASSERT_TRUE(backend);
  testing::internal::CaptureStderr();
  std::vector<float> result = runMatmul(**backend);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find((dir / "shipped.json").string() + ":2:"), std::string::npos) << log;
  EXPECT_EQ(result, runMatmul(**backend, {.tuned = {{"none", "none"}}}));
  fs::remove_all(dir);
}

} // namespace
