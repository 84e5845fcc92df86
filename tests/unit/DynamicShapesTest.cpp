//===- DynamicShapesTest.cpp - programs with `?` dims --------------------===//
//
// One compiled program serves every size of a `?` dim (the kernel cache
// keys the shape class), runs check inputs against the shape class, and the
// disk cache keeps it; device tensors and graphs take run-time sizes, and
// apply's automatic dynamic shapes switch an op that keeps changing size to
// one dynamic kernel (docs/dynamic-shapes.md).
//
//===----------------------------------------------------------------------===//
#include "kiln/backend/Backend.h"
#include "kiln/backend/Engine.h"
#include "kiln/backend/Ops.h"
#include "kiln/Lowering/Compiler.h"
#include "DeviceBackendTest.h"
#include "DeviceQueue.h"

#include <gtest/gtest.h>

#include <algorithm>
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

/// softmax over dim 1 of rows(count, cols), in double.
std::vector<double> softmaxRows(const HostTensor &x) {
  int64_t count = x.shape[0], cols = x.shape[1];
  std::vector<double> want(count * cols);
  for (int64_t r = 0; r < count; ++r) {
    const float *in = x.as<float>() + r * cols;
    double max = *std::max_element(in, in + cols), sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += std::exp(double(in[j]) - max);
    for (int64_t j = 0; j < cols; ++j)
      want[r * cols + j] = std::exp(double(in[j]) - max) / sum;
  }
  return want;
}

void expectSoftmaxOf(const HostTensor &x, const HostTensor &got) {
  ASSERT_EQ(got.shape, x.shape);
  std::vector<double> want = softmaxRows(x);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got.as<float>()[i], want[i], 1e-6) << "element " << i << " of " << x.shape[0];
}

std::unique_ptr<Engine> cpuEngine(DiskCacheConfig disk = {}) {
  auto engine = Engine::create({DeviceType::Cpu, 0}, std::move(disk));
  EXPECT_TRUE(engine) << engine.error().message;
  return std::move(*engine);
}
} // namespace

/// 500 row counts (the sweep issue 16 asks for) through one softmax
/// program on `engine`'s device: one compile, right answers at every size.
void sweepRowCounts(Engine *engine) {
  for (int64_t count = 0; count < 500; ++count) {
    // As a framework would: the program is asked for at every size.
    auto program = engine->compile(kSoftmax);
    ASSERT_TRUE(program) << program.error().message;
    HostTensor x = rows(count, 64);
    auto out = (*program)->run({x});
    ASSERT_TRUE(out) << out.error().message;
    expectSoftmaxOf(x, (*out)[0]);
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

// A bf16 matmul of run-time size on sm_90a (no GPU needed: PTX and the
// plan): the wgmma kernel (persistent: its grid computed at launch), its
// TMA maps sized at launch, where K and N are
// multiples of 8 (16-byte rows), the SIMT kernel otherwise, in 128-wide
// tiles where they fill the GPU's 132 SMs and 64-wide where not; the
// others' grids are empty.
TEST(DynamicShapes, CudaMatmulsTakeWgmmaWhereTheSizesSuitTma) {
  auto compiler = createCompiler();
  CompileOptions options;
  options.chip = "sm_90a";
  auto compiled = compiler->compileForCuda(R"(
func.func @main(%a: tensor<?x?xbf16>, %b: tensor<?x?xbf16>) -> tensor<?x?xf32> {
  %0 = kiln.matmul %a, %b : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
})", options);
  ASSERT_TRUE(compiled) << compiled.error().message;
  ASSERT_EQ(compiled->plan.launches.size(), 3u);
  auto at = [&](int64_t m, int64_t k, int64_t n) {
    std::vector<int64_t> dims = {m, k, k, n, m, n};
    auto plan = compiled->plan.at(dims);
    EXPECT_TRUE(plan) << plan.error().message;
    return *plan;
  };
  GpuPlan fits = at(300, 72, 520);
  const KernelLaunch &wgmma = fits.launches[0];
  EXPECT_EQ(wgmma.shape.block[0], 384u);
  // 520 columns in tiles of 256, 300 rows in tiles of 128: 9 tiles, a block
  // each; the persistent kernel runs at most a block per SM (132).
  EXPECT_EQ(wgmma.shape.grid[0], 9u);
  EXPECT_EQ(wgmma.shape.grid[1], 1u);
  EXPECT_EQ(at(4096, 64, 8192).launches[0].shape.grid[0], 132u);
  // A device of 114 SMs (H100 PCIe) gets at most 114 blocks: the backend
  // compiles with its own count (CompileOptions::multiprocessors).
  CompileOptions pcie = options;
  pcie.multiprocessors = 114;
  EXPECT_NE(pcie.codegenKey(), options.codegenKey());
  auto onPcie = compiler->compileForCuda(R"(
func.func @main(%a: tensor<4096x64xbf16>, %b: tensor<64x8192xbf16>) -> tensor<4096x8192xf32> {
  %0 = kiln.matmul %a, %b : (tensor<4096x64xbf16>, tensor<64x8192xbf16>) -> tensor<4096x8192xf32>
  return %0 : tensor<4096x8192xf32>
})", pcie);
  ASSERT_TRUE(onPcie) << onPcie.error().message;
  EXPECT_EQ(onPcie->plan.launches.at(0).shape.grid[0], 114u);
  EXPECT_EQ(fits.launches[1].shape.grid[0], 0u);
  EXPECT_EQ(fits.launches[2].shape.grid[0], 0u);
  std::vector<std::vector<int64_t>> sizes, strides;
  for (const KernelArgument &arg : wgmma.arguments)
    if (auto *map = std::get_if<TensorMapArgument>(&arg)) {
      sizes.push_back(map->view.sizes);
      strides.push_back(map->view.strides);
      EXPECT_TRUE(map->sizeValues.empty());
    }
  EXPECT_EQ(sizes, (std::vector<std::vector<int64_t>>{{300, 72}, {72, 520}}));
  EXPECT_EQ(strides, (std::vector<std::vector<int64_t>>{{72, 1}, {520, 1}}));
  // (blocks of 128 x 128: 3 x 5, then 24 x 17)
  for (auto [m, k, n, wide] : {std::tuple{300, 70, 520, false}, {300, 72, 518, false},
                               {300, 0, 520, false}, {3000, 70, 2100, true}}) {
    GpuPlan misfit = at(m, k, n);
    EXPECT_EQ(misfit.launches[0].shape.grid[0], 0u) << k << " " << n;
    EXPECT_EQ(misfit.launches[1].shape.grid[0], wide ? (n + 127u) / 128 : 0u) << m << " " << n;
    EXPECT_EQ(misfit.launches[2].shape.grid[0], wide ? 0u : (n + 63u) / 64) << m << " " << n;
  }
}

TEST(DynamicShapes, CudaPlansOfRunTimeAttentionHoldTogether) {
  // f16 attention of run-time sizes on sm_90a: many wgmma products whose
  // tensor-map descriptors share casts (CSE). The plan once copied a tensor
  // map through a reference into a DenseMap that the copy's insertion
  // moved: a freed view, "a tensor map's run-time sizes do not match its
  // view" at every run on the H200 (and a use-after-free).
  auto compiler = createCompiler();
  CompileOptions options;
  options.chip = "sm_90a";
  auto compiled = compiler->compileForCuda(R"(
func.func @main(%q: tensor<2x2x?x64xf16>, %k: tensor<2x2x?x64xf16>, %v: tensor<2x2x?x32xf16>,
                %m: tensor<2x1x?x?xf16>, %b: tensor<?x?xi1>, %qb: tensor<?x?x64xf16>,
                %kb: tensor<?x?x64xf16>, %qc: tensor<?x8x64xf16>, %kc: tensor<?x8x64xf16>)
    -> (tensor<2x2x?x32xf16>, tensor<2x2x?x32xf16>, tensor<2x2x?x32xf16>, tensor<?x?x64xf16>,
        tensor<?x8x64xf16>, tensor<?x?x64xf16>) {
  %a = kiln.attention %q, %k, %v
      : (tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>) -> tensor<2x2x?x32xf16>
  %am = kiln.attention %q, %k, %v, %m {scale = 0.2 : f64}
      : (tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>, tensor<2x1x?x?xf16>)
      -> tensor<2x2x?x32xf16>
  %ab = kiln.attention %q, %k, %v, %b
      : (tensor<2x2x?x64xf16>, tensor<2x2x?x64xf16>, tensor<2x2x?x32xf16>, tensor<?x?xi1>)
      -> tensor<2x2x?x32xf16>
  %r3 = kiln.attention %qb, %kb, %kb
      : (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  %c = kiln.attention %qc, %kc, %kc {causal = true}
      : (tensor<?x8x64xf16>, tensor<?x8x64xf16>, tensor<?x8x64xf16>) -> tensor<?x8x64xf16>
  %cq = kiln.attention %qb, %kb, %kb {causal = true}
      : (tensor<?x?x64xf16>, tensor<?x?x64xf16>, tensor<?x?x64xf16>) -> tensor<?x?x64xf16>
  return %a, %am, %ab, %r3, %c, %cq : tensor<2x2x?x32xf16>, tensor<2x2x?x32xf16>,
      tensor<2x2x?x32xf16>, tensor<?x?x64xf16>, tensor<?x8x64xf16>, tensor<?x?x64xf16>
}
)", options);
  ASSERT_TRUE(compiled) << compiled.error().message;
  auto ok = compiled->plan.checkSizeSteps(Program::dimCountOf(*compiled));
  ASSERT_TRUE(ok) << ok.error().message;
  for (auto [b, m, n] : {std::tuple{1, 1, 1}, {3, 17, 17}, {2, 40, 9}}) {
    std::vector<int64_t> dims = {2, 2, m, 64, 2, 2, n, 64, 2, 2, n, 32, 2, 1, m, n, m, n,
                                 b, m, 64, b, n, 64, b, 8, 64, b, 8, 64,
                                 2, 2, m, 32, 2, 2, m, 32, 2, 2, m, 32, b, m, 64, b, 8, 64, b, m, 64};
    ASSERT_EQ(dims.size(), Program::dimCountOf(*compiled));
    auto plan = compiled->plan.at(dims);
    EXPECT_TRUE(plan) << b << " x " << m << " x " << n << ": " << plan.error().message;
  }
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

TEST(DynamicShapes, DiskCacheKeepsSumsAndBounds) {
  // A pad along a `?` dim (a sum), a slice of `?` rows (a bound) and an
  // input tied to the sum: the rules come back from the disk cache.
  constexpr const char *kSums = R"(
func.func @main(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<2x4xf32>) {
  %p = kiln.pad %x {low = array<i64: 1, 0>, high = array<i64: 1, 0>} : tensor<?x4xf32> -> tensor<?x4xf32>
  %s = kiln.add %p, %y : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %t = kiln.slice %x {start = array<i64: 1, 0>, stop = array<i64: 3, 4>} : tensor<?x4xf32> -> tensor<2x4xf32>
  return %s, %t : tensor<?x4xf32>, tensor<2x4xf32>
})";
  fs::path root = fs::temp_directory_path() / ("kiln-sums-" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    auto cold = cpuEngine({root, 0, false});
    auto program = cold->compile(kSums);
    ASSERT_TRUE(program) << program.error().message;
    EXPECT_EQ((*program)->sizeRules().size(), 2u);
  }
  auto warm = cpuEngine({root, 0, false});
  auto program = warm->compile(kSums);
  ASSERT_TRUE(program) << program.error().message;
  EXPECT_EQ(warm->diskCacheHits(), 1u);
  auto out = (*program)->run({rows(5, 4), rows(7, 4)});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{7, 4}));
  auto unequal = (*program)->run({rows(5, 4), rows(6, 4)});
  ASSERT_FALSE(unequal);
  EXPECT_NE(unequal.error().message.find("input #1 dim 0 is 6 but the program makes that size 7"),
            std::string::npos)
      << unequal.error().message;
  auto short_ = (*program)->run({rows(2, 4), rows(4, 4)});
  ASSERT_FALSE(short_);
  EXPECT_EQ(short_.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(short_.error().message.find("input #0 dim 0 is 2 but"), std::string::npos)
      << short_.error().message;
  EXPECT_NE(short_.error().message.find("'kiln.slice' needs at least 3"), std::string::npos)
      << short_.error().message;
  fs::remove_all(root);
}

TEST(DynamicShapes, DiskCacheKeepsWindows) {
  // A pool over images of run-time size: its output dims are the window's
  // counts (a rule with a window), which come back from the disk cache; so
  // does a pool, a same-size conv and their sum (a check whose window reads
  // the size it is tied to).
  constexpr const char *kPool = R"(
func.func @main(%x: tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 5, 5>, stride = array<i64: 3, 3>, padding = array<i64: 1, 1>} : tensor<1x1x?x?xf32> -> tensor<1x1x?x?xf32>
  return %0 : tensor<1x1x?x?xf32>
})";
  constexpr const char *kResidual = R"(
func.func @main(%x: tensor<1x1x?x?xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x?x?xf32> {
  %m = kiln.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<1x1x?x?xf32> -> tensor<1x1x?x?xf32>
  %c = kiln.conv2d %m, %w {padding = array<i64: 1, 1>} : (tensor<1x1x?x?xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x?x?xf32>
  %s = kiln.add %c, %m : (tensor<1x1x?x?xf32>, tensor<1x1x?x?xf32>) -> tensor<1x1x?x?xf32>
  return %s : tensor<1x1x?x?xf32>
})";
  fs::path root = fs::temp_directory_path() / ("kiln-windows-" + std::to_string(::getpid()));
  fs::remove_all(root);
  {
    auto cold = cpuEngine({root, 0, false});
    auto program = cold->compile(kPool);
    ASSERT_TRUE(program) << program.error().message;
    ASSERT_EQ((*program)->sizeRules().size(), 2u);
    EXPECT_EQ((*program)->sizeRules()[0].window, (SizeWindow{2, 5, 3}));
    auto residual = cold->compile(kResidual);
    ASSERT_TRUE(residual) << residual.error().message;
  }
  auto warm = cpuEngine({root, 0, false});
  auto program = warm->compile(kPool);
  ASSERT_TRUE(program) << program.error().message;
  auto residual = warm->compile(kResidual);
  ASSERT_TRUE(residual) << residual.error().message;
  EXPECT_EQ(warm->diskCacheHits(), 2u);
  EXPECT_EQ(warm->compileCount(), 0u);
  for (auto [h, w, oh, ow] : {std::array<int64_t, 4>{9, 4, 3, 1}, {3, 3, 1, 1}}) {
    HostTensor x(DType::F32, {1, 1, h, w});
    for (int64_t i = 0; i < x.numElements(); ++i)
      x.as<float>()[i] = float(i);
    auto out = (*program)->run({x});
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ((*out)[0].shape, (std::vector<int64_t>{1, 1, oh, ow}));
    // The last window holds the image's last element.
    EXPECT_EQ((*out)[0].as<float>()[oh * ow - 1], float(h * w - 1));
  }
  HostTensor x(DType::F32, {1, 1, 6, 4}), w(DType::F32, {1, 1, 3, 3});
  for (int64_t i = 0; i < x.numElements(); ++i)
    x.as<float>()[i] = float(i);
  for (int64_t i = 0; i < w.numElements(); ++i)
    w.as<float>()[i] = i == 4 ? 1.0f : 0.0f; // the identity: the sum is twice the pool
  auto sum = (*residual)->run({x, w});
  ASSERT_TRUE(sum) << sum.error().message;
  EXPECT_EQ((*sum)[0].shape, (std::vector<int64_t>{1, 1, 3, 2}));
  EXPECT_EQ((*sum)[0].as<float>()[5], 2.0f * 23.0f);
  fs::remove_all(root);
}

namespace {
/// Device tensors on cpu:0, vulkan:0 and cuda:0 (a device this machine
/// lacks is skipped, saying so): programs with `?` dims through
/// Backend::run, graphs, and apply's automatic dynamic shapes.
class DynamicDevice : public DeviceBackendTest {};
} // namespace

TEST_P(DynamicDevice, ProgramsRunOnDeviceTensorsAtEverySize) {
  for (int64_t count : {0, 1, 7, 64, 130}) {
    HostTensor x = rows(count, 64);
    auto out = backend->run(kSoftmax, {upload(x)});
    ASSERT_TRUE(out) << out.error().message;
    expectSoftmaxOf(x, download((*out)[0]));
  }
  EXPECT_EQ(backend->kernels().compileCount(), 1u);
}

TEST_P(DynamicDevice, RowKernelsOfOneElementRowsTakeRunTimeRowCounts) {
  // Rows of one element, their count a product with a `?` (the row kernel
  // pass once multiplied the `?` marker into it: UBSan, fuzz-capi).
  constexpr const char *kSoftmaxOfOne = R"(
func.func @main(%x: tensor<2x?x1xf32>) -> tensor<2x?x1xf32> {
  %0 = kiln.softmax %x {dim = 2} : tensor<2x?x1xf32>
  return %0 : tensor<2x?x1xf32>
})";
  for (int64_t count : {0, 3, 70}) {
    HostTensor x = rows(2 * count, 1);
    x.shape = {2, count, 1};
    auto out = backend->run(kSoftmaxOfOne, {upload(x)});
    ASSERT_TRUE(out) << out.error().message;
    HostTensor got = download((*out)[0]);
    ASSERT_EQ(got.shape, x.shape);
    for (int64_t i = 0; i < got.numElements(); ++i)
      ASSERT_EQ(got.as<float>()[i], 1.0f) << "element " << i << " of " << count;
  }
  EXPECT_EQ(backend->kernels().compileCount(), 1u);
}

TEST_P(DynamicDevice, ReductionsOfRunTimeRowCountsAndLengths) {
  // A `?` row count before a static one: the GPU split-reduction planner
  // once multiplied the `?` marker by 2 (UBSan, fuzz-capi).
  constexpr const char *kSum = R"(
func.func @main(%x: tensor<?x2x?xf32>) -> tensor<?x2xf32> {
  %0 = kiln.reduce_sum %x {dims = array<i64: 2>} : tensor<?x2x?xf32> -> tensor<?x2xf32>
  return %0 : tensor<?x2xf32>
})";
  for (auto [rows, length] : std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {1, 40000}, {0, 2}}) {
    HostTensor x(DType::F32, {rows, 2, length});
    for (int64_t i = 0; i < x.numElements(); ++i)
      x.as<float>()[i] = float(i / length % 7);
    auto out = backend->run(kSum, {upload(x)});
    ASSERT_TRUE(out) << out.error().message;
    HostTensor got = download((*out)[0]);
    ASSERT_EQ(got.shape, (std::vector<int64_t>{rows, 2}));
    for (int64_t r = 0; r < rows * 2; ++r)
      ASSERT_EQ(got.as<float>()[r], float(r % 7 * length)) << "row " << r;
  }
}

TEST_P(DynamicDevice, SizesThatDoNotFitAreInvalidArgumentNamingTheDims) {
  constexpr const char *kAdd = R"(
func.func @main(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = kiln.add %a, %b : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
})";
  auto unequal = backend->run(kAdd, {upload(rows(3, 4)), upload(rows(5, 4))});
  ASSERT_FALSE(unequal);
  EXPECT_EQ(unequal.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(unequal.error().message.find("input #1 dim 0 is 5 but input #0 dim 0 is 3"),
            std::string::npos)
      << unequal.error().message;
  auto wrongStatic = backend->run(kAdd, {upload(rows(3, 4)), upload(rows(3, 5))});
  ASSERT_FALSE(wrongStatic);
  EXPECT_EQ(wrongStatic.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(wrongStatic.error().message.find(
                "input #1 is tensor<3x5xf32>, the program expects tensor<?x4xf32> (dim 1)"),
            std::string::npos)
      << wrongStatic.error().message;
}

TEST_P(DynamicDevice, GraphsReplayAtTheSizesTheyWereCapturedWith) {
  ASSERT_TRUE(backend->graphPrepare());
  HostTensor five = rows(5, 64);
  Tensor x = upload(five);
  ASSERT_TRUE(backend->graphStartCapture());
  auto captured = backend->run(kSoftmax, {x});
  ASSERT_TRUE(captured) << captured.error().message;
  auto graph = backend->graphStopCapture();
  ASSERT_TRUE(graph) << graph.error().message;
  EXPECT_GE(graph->launchCount(), 1u);
  // The same program at another size between replays.
  HostTensor nine = rows(9, 64);
  auto other = backend->run(kSoftmax, {upload(nine)});
  ASSERT_TRUE(other) << other.error().message;
  expectSoftmaxOf(nine, download((*other)[0]));
  // New data of the captured size; the replay computes it at 5 rows.
  for (int64_t i = 0; i < five.numElements(); ++i)
    five.as<float>()[i] = 0.05f * float(i % 13);
  ASSERT_TRUE(backend->write(x, five));
  ASSERT_TRUE(backend->graphReplay(*graph));
  expectSoftmaxOf(five, download((*captured)[0]));
}

TEST_P(DynamicDevice, AutoDynamicSweepOfRowCountsCompilesTwice) {
  // Typed ops run on the device's shared backend.
  auto shared = Backend::shared(id);
  ASSERT_TRUE(shared) << shared.error().message;
  ASSERT_TRUE((*shared)->autoDynamic()) << "on unless KILN_AUTO_DYNAMIC=0";
  size_t before = (*shared)->kernels().compileCount();
  for (int64_t count = 1; count <= 50; ++count) {
    HostTensor x = rows(count, 37);
    auto t = (*shared)->upload(x);
    ASSERT_TRUE(t) << t.error().message;
    auto y = ops::softmax(*t, 1);
    ASSERT_TRUE(y) << y.error().message;
    auto got = (*shared)->download(*y);
    ASSERT_TRUE(got) << got.error().message;
    expectSoftmaxOf(x, *got);
  }
  // Row count 1 static, 2 onward one dynamic kernel.
  EXPECT_LE((*shared)->kernels().compileCount() - before, 2u);
}

TEST_P(DynamicDevice, AutoDynamicOffCompilesEverySize) {
  backend->setAutoDynamic(false);
  for (int64_t count = 2; count < 6; ++count) {
    HostTensor x = rows(count, 8);
    auto y = backend->apply("kiln.softmax", {upload(x)}, DType::F32, x.shape, "dim = 1 : i64");
    ASSERT_TRUE(y) << y.error().message;
    expectSoftmaxOf(x, download(*y));
  }
  EXPECT_EQ(backend->kernels().compileCount(), 4u);
}

TEST_P(DynamicDevice, AutoDynamicKeepsSizeOneStaticForBroadcasting) {
  // x [n,4] + y [1,4] or [n,4]: y's dim 0 changes between 1 and n, and a
  // `?` never broadcasts, so a 1 stays static (every call is right).
  for (auto [n, yRows] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 1}, {5, 5}, {6, 1}, {7, 7}, {2, 1}}) {
    HostTensor a = rows(n, 4), b = rows(yRows, 4);
    auto sum = backend->apply("kiln.add", {upload(a), upload(b)}, DType::F32, {n, 4});
    ASSERT_TRUE(sum) << sum.error().message;
    HostTensor got = download(*sum);
    for (int64_t i = 0; i < n * 4; ++i)
      ASSERT_FLOAT_EQ(got.as<float>()[i],
                      a.as<float>()[i] + b.as<float>()[(yRows == 1 ? 0 : i / 4) * 4 + i % 4])
          << n << " rows, y of " << yRows;
  }
  // The first call's static kernel, then one dynamic kernel per pattern
  // of `?` dims ([?,4] + [1,4], [?,4] + [?,4]).
  EXPECT_EQ(backend->kernels().compileCount(), 3u);
}

TEST_P(DynamicDevice, AutoDynamicRefusesAResultShapeOfItsOwn) {
  // A result size that changed with no input's is a wrong result type, as
  // without automatic dynamic (the verifier's error), not a `?` result.
  Tensor x = upload(rows(4, 8));
  ASSERT_TRUE(backend->apply("kiln.add", {x, x}, DType::F32, {4, 8}));
  auto wrong = backend->apply("kiln.add", {x, x}, DType::F32, {5, 8});
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().kind, ErrorKind::InvalidArgument) << wrong.error().message;
}

TEST_P(DynamicDevice, AutoDynamicLeavesOpsWithoutDynamicKernelsStatic) {
  // A reshape of two dims that change into one has no kernel of `?` dims:
  // each size compiles, and its results stay right.
  for (int64_t n : {4, 6, 10}) {
    HostTensor x = rows(n, 4);
    auto y = backend->apply("kiln.reshape", {upload(x)}, DType::F32, {4 * n});
    ASSERT_TRUE(y) << y.error().message;
    HostTensor got = download(*y);
    for (int64_t i = 0; i < 4 * n; ++i)
      ASSERT_EQ(got.as<float>()[i], x.as<float>()[i]);
  }
  EXPECT_EQ(backend->kernels().compileCount(), 3u);
}

TEST_P(DynamicDevice, AutoDynamicPoolsOverImageSizesCompileTwice) {
  // max_pool2d's second image size compiles a kernel whose output dims
  // count the window's places, which every later size takes.
  for (int64_t n : {4, 6, 10, 8}) {
    HostTensor x(DType::F32, {1, 1, n, n});
    for (int64_t i = 0; i < n * n; ++i)
      x.as<float>()[i] = float(i);
    auto y = backend->apply("kiln.max_pool2d", {upload(x)}, DType::F32, {1, 1, n / 2, n / 2},
                            "kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>");
    ASSERT_TRUE(y) << y.error().message;
    HostTensor got = download(*y);
    for (int64_t r = 0; r < n / 2; ++r)
      for (int64_t c = 0; c < n / 2; ++c)
        ASSERT_EQ(got.as<float>()[r * (n / 2) + c], float((2 * r + 1) * n + 2 * c + 1));
  }
  EXPECT_EQ(backend->kernels().compileCount(), 2u);
}

TEST_P(DynamicDevice, AutoDynamicPadsCompileTwice) {
  // pad's second size compiles a kernel whose padded dim is a sum of a
  // run-time size, which every later size takes.
  for (int64_t n : {3, 5, 8, 0}) {
    HostTensor x(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i)
      x.as<float>()[i] = 1;
    auto y = backend->apply("kiln.pad", {upload(x)}, DType::F32, {n + 2},
                            "low = array<i64: 1>, high = array<i64: 1>");
    ASSERT_TRUE(y) << y.error().message;
    HostTensor got = download(*y);
    ASSERT_EQ(got.shape, (std::vector<int64_t>{n + 2}));
    for (int64_t i = 0; i < n + 2; ++i)
      ASSERT_EQ(got.as<float>()[i], i == 0 || i == n + 1 ? 0.0f : 1.0f);
  }
  EXPECT_EQ(backend->kernels().compileCount(), 2u);
}

TEST_P(DynamicDevice, AutoDynamicScansCompileTwice) {
  // cumsum's second size compiles a scan of run-time length, which every
  // later size takes: short rows (a thread each on the GPUs), one chunk,
  // several chunks.
  for (int64_t n : {3, 5, 40, 2048, 5000}) {
    HostTensor x(DType::F32, {n});
    for (int64_t i = 0; i < n; ++i)
      x.as<float>()[i] = 1;
    auto y = backend->apply("kiln.cumsum", {upload(x)}, DType::F32, {n}, "dim = 0 : i64");
    ASSERT_TRUE(y) << y.error().message;
    HostTensor got = download(*y);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got.as<float>()[i], float(i + 1)) << "n " << n << " at " << i;
  }
  EXPECT_EQ(backend->kernels().compileCount(), 2u);
}

INSTANTIATE_TEST_SUITE_P(Devices, DynamicDevice,
                         ::testing::Values("cpu:0", "vulkan:0", "cuda:0"),
                         [](const auto &info) {
                           std::string name = info.param;
                           return name.substr(0, name.find(':'));
                         });

// A GPU program's plan at run-time dims is evaluated once for dims that
// repeat (a decode loop's steps); other dims evaluate it again, and an
// evaluation that fails is not kept.
TEST(LastLaunchSizes, EvaluatesOnceWhileTheDimsRepeat) {
  LastLaunchSizes last;
  int evaluations = 0;
  auto evaluate = [&](const std::vector<int64_t> &dims) -> Expected<GpuPlan> {
    ++evaluations;
    if (dims[0] < 0)
      return makeError(ErrorKind::InvalidArgument, "negative");
    GpuPlan plan;
    plan.bufferBytes = {size_t(dims[0]) * 4};
    return plan;
  };
  auto first = last.at({16}, evaluate);
  auto again = last.at({16}, evaluate);
  ASSERT_TRUE(first && again);
  EXPECT_EQ(evaluations, 1);
  EXPECT_EQ(first->plan.get(), again->plan.get());
  auto other = last.at({32}, evaluate);
  ASSERT_TRUE(other);
  EXPECT_EQ(evaluations, 2);
  EXPECT_EQ(other->plan->bufferBytes, std::vector<size_t>{128});
  EXPECT_EQ(other->dims, std::vector<int64_t>{32});
  EXPECT_FALSE(last.at({-1}, evaluate));
  EXPECT_FALSE(last.at({-1}, evaluate));
  EXPECT_EQ(evaluations, 4);
  auto back = last.at({32}, evaluate);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->plan.get(), other->plan.get());
  EXPECT_EQ(evaluations, 4);
}
