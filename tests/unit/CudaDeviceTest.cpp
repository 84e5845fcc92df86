//===- CudaDeviceTest.cpp - the CUDA runtime on hand-written PTX ---------===//
//
// On machines without a GPU or driver these check that kiln reports zero
// devices and skip, visibly, what needs a device.
//
//===----------------------------------------------------------------------===//
#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Backend.h"
#include "kiln/runtime/cuda/CudaDevice.h"
#include "kiln/runtime/cuda/CudaProgram.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace kiln;

namespace {
constexpr const char *kPtx = R"(
.version 7.0
.target sm_80
.address_size 64

.visible .entry vadd(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
  .reg .pred %p;
  .reg .b32 %r<6>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p, %r5, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.u32 %rd7, %r5, 4;
  add.s64 %rd8, %rd4, %rd7;
  ld.global.f32 %f1, [%rd8];
  add.s64 %rd8, %rd5, %rd7;
  ld.global.f32 %f2, [%rd8];
  add.f32 %f3, %f1, %f2;
  add.s64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f3;
DONE:
  ret;
}

.visible .entry out_of_bounds()
{
  .reg .b64 %rd1;
  .reg .f32 %f1;
  mov.u64 %rd1, 16;
  mov.f32 %f1, 0f3F800000;
  st.global.f32 [%rd1], %f1;
  ret;
}
)";

#define REQUIRE_CUDA_DEVICE()                                                  \
  if (CudaDevice::deviceCount() == 0)                                          \
  GTEST_SKIP() << "no CUDA device: " << CudaDevice::unavailableReason()
} // namespace

TEST(CudaDevice, CountIsZeroWithAReasonWhenThereIsNoDriver) {
  if (CudaDevice::deviceCount() > 0)
    GTEST_SKIP() << "this machine has CUDA devices";
  EXPECT_FALSE(CudaDevice::unavailableReason().empty());
  auto device = CudaDevice::create(0);
  ASSERT_FALSE(device);
  EXPECT_EQ(device.error().kind, ErrorKind::InvalidArgument);
}

// Kernels for a 9.0 device are sm_90a code (wgmma is arch-specific); other
// chips get their own name.
TEST(CudaDevice, KernelChipIsArchSpecificOnNinePointZeroOnly) {
  CudaDeviceProperties hopper{.computeMajor = 9, .computeMinor = 0};
  EXPECT_EQ(hopper.chip(), "sm_90");
  EXPECT_EQ(hopper.kernelChip(), "sm_90a");
  CudaDeviceProperties ampere{.computeMajor = 8, .computeMinor = 0};
  EXPECT_EQ(ampere.kernelChip(), "sm_80");
  CudaDeviceProperties blackwell{.computeMajor = 10, .computeMinor = 0};
  EXPECT_EQ(blackwell.kernelChip(), "sm_100");
}

// A launch beyond CUDA's grid or block limits is an Unsupported error
// naming the kernel and the limit, before the driver sees it (no device
// needed): a batched kernel with its batch in grid z of 70000.
TEST(CudaDevice, LaunchesBeyondTheGridLimitsNameTheKernel) {
  GpuPlan plan;
  KernelLaunch batched;
  batched.kernel = "main_kernel_3";
  batched.shape.grid = {4, 2, 70000};
  batched.shape.block = {256, 1, 1};
  plan.launches.push_back(batched);
  auto bad = CudaProgram::checkLimits(plan);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::Unsupported);
  EXPECT_NE(bad.error().message.find("kernel main_kernel_3 blocks in dim 2 is 70000, beyond "
                                     "CUDA's limit (65535)"),
            std::string::npos)
      << bad.error().message;
  plan.launches[0].shape.grid = {2147483647, 65535, 65535};
  EXPECT_TRUE(CudaProgram::checkLimits(plan));
  plan.launches[0].shape.block = {64, 32, 1};
  auto threads = CudaProgram::checkLimits(plan);
  ASSERT_FALSE(threads);
  EXPECT_NE(threads.error().message.find("threads per block is 2048"), std::string::npos)
      << threads.error().message;
}

/// A bf16 matmul operand's map as the wgmma kernel asks for it: a 300 x 72
/// view (rows of 144 bytes) at element `offset`, boxes of 128 x 64.
TensorMapArgument operandMap(int64_t offset = 8) {
  return {BufferView{0, offset, {300, 72}, {72, 1}}, 2, {128, 64}, 128};
}

TEST(CudaDevice, TensorMapsTakeTheViewInnermostFirst) {
  auto map = tiledTensorMap(operandMap(), 0x10000);
  ASSERT_TRUE(map) << map.error().message;
  EXPECT_EQ(map->rank, 2u);
  EXPECT_EQ(map->address, 0x10000u + 16);
  EXPECT_EQ(map->dims[0], 72u);
  EXPECT_EQ(map->dims[1], 300u);
  EXPECT_EQ(map->strides[0], 144u);
  EXPECT_EQ(map->box[0], 64u);
  EXPECT_EQ(map->box[1], 128u);
  EXPECT_EQ(map->dataType, 1u); // 16-bit
  EXPECT_EQ(map->swizzle, 3u);  // 128 bytes
  TensorMapArgument batched{BufferView{0, 0, {2, 300, 72}, {21600, 72, 1}}, 2, {1, 128, 64}};
  map = tiledTensorMap(batched, 0);
  ASSERT_TRUE(map) << map.error().message;
  EXPECT_EQ(map->rank, 3u);
  EXPECT_EQ(map->strides[1], 43200u);
}

TEST(CudaDevice, TensorMapsTmaCannotExpressAreUnsupportedNotCrashes) {
  auto fails = [](TensorMapArgument map, uint64_t address, ErrorKind kind, const char *what) {
    auto t = tiledTensorMap(map, address);
    ASSERT_FALSE(t) << what;
    EXPECT_EQ(t.error().kind, kind) << what << ": " << t.error().message;
    EXPECT_NE(t.error().message.find("tensor map"), std::string::npos) << t.error().message;
  };
  fails(operandMap(3), 0, ErrorKind::Unsupported, "a start off 16 bytes");
  fails(operandMap(), 0x10008, ErrorKind::Unsupported, "a buffer off 16 bytes");
  TensorMapArgument rows = operandMap();
  rows.view.strides = {71, 1};
  fails(rows, 0, ErrorKind::Unsupported, "rows of 142 bytes");
  rows.view.strides = {72, 2};
  fails(rows, 0, ErrorKind::Unsupported, "a strided innermost dim");
  TensorMapArgument wide = operandMap();
  wide.box = {128, 128};
  fails(wide, 0, ErrorKind::Unsupported, "a 256-byte box row in a 128-byte swizzle");
  wide.box = {512, 64};
  fails(wide, 0, ErrorKind::Unsupported, "a box past 256");
  TensorMapArgument deep{BufferView{0, 0, std::vector<int64_t>(6, 2), {32, 16, 8, 4, 2, 1}}, 2,
                         std::vector<int64_t>(6, 1)};
  fails(deep, 0, ErrorKind::Unsupported, "6 dims");
  TensorMapArgument odd = operandMap();
  odd.elementBytes = 3;
  fails(odd, 0, ErrorKind::Unsupported, "3-byte elements");
  odd = operandMap();
  odd.swizzleBytes = 96;
  fails(odd, 0, ErrorKind::Unsupported, "a 96-byte swizzle");
  TensorMapArgument broken = operandMap();
  broken.box = {128};
  fails(broken, 0, ErrorKind::InvalidArgument, "a box of fewer dims than the view");
  broken = operandMap();
  broken.view.sizes = {0, 72};
  fails(broken, 0, ErrorKind::InvalidArgument, "an empty dim");
}

TEST(CudaDevice, TensorMapsEncodeOnTheDevice) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device) << device.error().message;
  if ((*device)->properties().computeMajor < 9)
    GTEST_SKIP() << "TMA needs sm_90";
  auto encoded = (*device)->encodeTensorMap(operandMap(), 0x10000);
  ASSERT_TRUE(encoded) << encoded.error().message;
  EXPECT_NE(encoded->bits, CudaTensorMap{}.bits);
  auto bad = (*device)->encodeTensorMap(operandMap(3), 0x10000);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::Unsupported);
}

TEST(CudaDevice, PropertiesAndVectorAddFromPtx) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device) << device.error().message;
  const CudaDeviceProperties &p = (*device)->properties();
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GT(p.totalMemory, size_t(1) << 30);
  EXPECT_EQ(p.warpSize, 32);
  std::printf("cuda:0 is %s (%s, %d SMs, %zu MiB)\n", p.name.c_str(),
              p.chip().c_str(), p.multiprocessors, p.totalMemory >> 20);

  auto module = (*device)->loadModule(kPtx);
  ASSERT_TRUE(module) << module.error().message;
  auto vadd = (*device)->kernel(*module, "vadd");
  ASSERT_TRUE(vadd);
  constexpr unsigned n = 1 << 20;
  std::vector<float> a(n), b(n), c(n);
  for (unsigned i = 0; i < n; ++i)
    a[i] = float(i), b[i] = 0.5f * float(i);
  uint64_t da = *(*device)->allocate(n * 4), db = *(*device)->allocate(n * 4),
           dc = *(*device)->allocate(n * 4);
  ASSERT_TRUE((*device)->copyToDevice(da, a.data(), n * 4));
  ASSERT_TRUE((*device)->copyToDevice(db, b.data(), n * 4));
  unsigned count = n;
  std::vector<void *> args = {&da, &db, &dc, &count};
  LaunchShape shape;
  shape.grid[0] = n / 256;
  shape.block[0] = 256;
  ASSERT_TRUE((*device)->launch(*vadd, shape, args));
  ASSERT_TRUE((*device)->sync());
  ASSERT_TRUE((*device)->copyToHost(c.data(), dc, n * 4));
  for (unsigned i = 0; i < n; i += 997)
    ASSERT_EQ(c[i], 1.5f * float(i)) << i;
  for (uint64_t p : {da, db, dc})
    EXPECT_TRUE((*device)->free(p));
}

TEST(CudaDevice, BadPtxIsACompileErrorWithTheDriverLog) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device);
  auto module = (*device)->loadModule(".version 7.0\n.target sm_80\nnot ptx at all\n");
  ASSERT_FALSE(module);
  EXPECT_EQ(module.error().kind, ErrorKind::Compile);
}

TEST(CudaDevice, OutOfMemoryIsReportedAndTheDeviceStaysUsable) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device);
  auto huge = (*device)->allocate(size_t(1) << 50);
  ASSERT_FALSE(huge);
  EXPECT_EQ(huge.error().kind, ErrorKind::OutOfMemory);
  auto small = (*device)->allocate(1024);
  ASSERT_TRUE(small) << small.error().message;
  EXPECT_TRUE((*device)->free(*small));
}

TEST(CudaDevice, PinnedStagingRoundTripsThroughTheDevice) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device);
  constexpr size_t n = 1 << 20;
  auto in = (*device)->allocatePinned(n * sizeof(float));
  auto out = (*device)->allocatePinned(n * sizeof(float));
  auto gpu = (*device)->allocate(n * sizeof(float));
  ASSERT_TRUE(in && out && gpu);
  float *src = static_cast<float *>(*in), *dst = static_cast<float *>(*out);
  for (size_t i = 0; i < n; ++i)
    src[i] = float(i);
  ASSERT_TRUE((*device)->copyToDevice(*gpu, src, n * sizeof(float)));
  ASSERT_TRUE((*device)->copyToHost(dst, *gpu, n * sizeof(float)));
  EXPECT_EQ(std::memcmp(src, dst, n * sizeof(float)), 0);
  EXPECT_TRUE((*device)->freePinned(*in));
  EXPECT_TRUE((*device)->freePinned(*out));
  EXPECT_TRUE((*device)->free(*gpu));
}

TEST(CudaDevice, ProgramRunsReuseTheirMemoryPoolPages) {
  REQUIRE_CUDA_DEVICE();
  auto device = CudaDevice::create(0);
  ASSERT_TRUE(device);
  auto compilerOwner = createCompiler();
  Compiler &compiler = *compilerOwner;
  CompileOptions options;
  options.chip = (*device)->properties().kernelChip();
  auto compiled = compiler.compileForCuda(R"(
    func.func @main(%a: tensor<1000xf32>, %b: tensor<1000xf32>) -> tensor<1000xf32> {
      %0 = kiln.add %a, %b : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
      return %0 : tensor<1000xf32>
    })", options);
  ASSERT_TRUE(compiled) << compiled.error().message;
  auto program = CudaProgram::load(**device, compiled->plan);
  ASSERT_TRUE(program);
  std::vector<float> a(1000, 1.5f), b(1000, 2.0f), c(1000, 0.0f);
  void *buffers[] = {a.data(), b.data(), c.data()};
  size_t afterFirst = 0;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*program)->run(buffers));
    if (i == 0)
      afterFirst = (*device)->pool().pageAllocations();
  }
  EXPECT_EQ((*device)->pool().pageAllocations(), afterFirst);
  EXPECT_EQ(c[999], 3.5f);
  EXPECT_EQ((*device)->pool().usage().bytesInUse, 0u);
}

// The fault runs in a child process (the threadsafe death-test style runs
// the test binary afresh for it), as it leaves the device's primary context
// unusable for the rest of the process.
TEST(CudaDeviceDeathTest, KernelFaultPoisonsTheDevice) {
  REQUIRE_CUDA_DEVICE();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto faultThenUse = [] {
    auto device = CudaDevice::create(0);
    if (!device)
      return 2;
    auto module = (*device)->loadModule(kPtx);
    if (!module)
      return 2;
    auto bad = (*device)->kernel(*module, "out_of_bounds");
    std::vector<void *> none;
    if (!bad || !(*device)->launch(*bad, LaunchShape{}, none))
      return 2;
    auto synced = (*device)->sync();
    auto later = (*device)->allocate(1024);
    bool poisoned = !synced && synced.error().kind == ErrorKind::DevicePoisoned &&
                    (*device)->poisoned() && !later &&
                    later.error().kind == ErrorKind::DevicePoisoned;
    // A backend made for the device afterwards refuses work too.
    auto backend = Backend::create(*DeviceId::parse("cuda:0"));
    Expected<Tensor> upload =
        backend ? (*backend)->upload(HostTensor(DType::F32, {4})) : std::unexpected(backend.error());
    bool refused = !upload && upload.error().kind == ErrorKind::DevicePoisoned;
    return poisoned && refused ? 0 : 1;
  };
  EXPECT_EXIT(std::exit(faultThenUse()), ::testing::ExitedWithCode(0), "");
}
