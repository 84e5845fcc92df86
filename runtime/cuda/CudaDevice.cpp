//===- CudaDevice.cpp - NVIDIA GPUs through the CUDA driver API ----------===//
#include "kiln/runtime/cuda/CudaDevice.h"

#include "cuda/CudaDriverTypes.h"

#include <dlfcn.h>
#include <cstring>
#include <mutex>

namespace kiln {

using namespace cuda;

struct CudaDriver {
#define KILN_CUDA_DRIVER_SYMBOL(member, symbol, parameters) CUresult(*member) parameters = nullptr;
#include "cuda/CudaDriverSymbols.def"
#undef KILN_CUDA_DRIVER_SYMBOL
  // CUDA 12 and later; only tensor maps (sm_90 matmuls) need it.
  CUresult (*tensorMapEncodeTiled)(CUtensorMap *, int, unsigned, void *, const uint64_t *,
                                   const uint64_t *, const uint32_t *, const uint32_t *, int,
                                   int, int, int) = nullptr;

  std::string unavailable; // why there is no usable driver, if there is none
  int count = 0;

  static const CudaDriver &get() {
    static const CudaDriver driver = load();
    return driver;
  }

private:
  static CudaDriver load() {
    CudaDriver d{};
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      d.unavailable = std::string("libcuda.so.1 not found: ") + (why ? why : "");
      return d;
    }
    // Every symbol, or the driver is unusable: the first one missing is named.
#define KILN_CUDA_DRIVER_SYMBOL(member, symbol, parameters)                    \
  d.member = reinterpret_cast<decltype(d.member)>(dlsym(lib, #symbol));        \
  if (!d.member) {                                                             \
    d.unavailable = "libcuda.so.1 has no " #symbol;                            \
    return d;                                                                  \
  }
#include "cuda/CudaDriverSymbols.def"
#undef KILN_CUDA_DRIVER_SYMBOL
    d.tensorMapEncodeTiled =
        reinterpret_cast<decltype(d.tensorMapEncodeTiled)>(dlsym(lib, "cuTensorMapEncodeTiled"));
    if (CUresult r = d.init(0); r != CUDA_SUCCESS) {
      d.unavailable = "cuInit failed: " + d.describe(r);
      return d;
    }
    if (d.deviceGetCount(&d.count) != CUDA_SUCCESS || d.count == 0) {
      d.count = 0;
      d.unavailable = "the CUDA driver finds no devices";
    }
    return d;
  }

public:
  std::string describe(CUresult r) const {
    const char *name = nullptr, *text = nullptr;
    if (getErrorName)
      getErrorName(r, &name);
    if (getErrorString)
      getErrorString(r, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(r)) +
           (text ? std::string(" (") + text + ")" : "");
  }
};

std::string CudaDeviceProperties::chip() const {
  return "sm_" + std::to_string(computeMajor) + std::to_string(computeMinor);
}

std::string CudaDeviceProperties::kernelChip() const {
  return computeMajor == 9 && computeMinor == 0 ? "sm_90a" : chip();
}

int CudaDevice::deviceCount() { return CudaDriver::get().count; }

std::string CudaDevice::unavailableReason() {
  return CudaDriver::get().unavailable;
}

CudaDevice::CudaDevice(const CudaDriver &driver, int ordinal, void *context,
                       void *stream, CudaDeviceProperties props)
    : driver(driver), ordinal(ordinal), context(context), stream(stream),
      props(std::move(props)),
      memoryPool(std::make_unique<MemoryPool>(MemoryPool::PageSource{
          [this](size_t bytes) { return allocate(bytes); },
          [this](uint64_t address) { (void)free(address); }})) {}

CudaDevice::~CudaDevice() {
  memoryPool.reset(); // its pages go back while the context lives
  if (!isPoisoned) {
    driver.ctxSetCurrent(context);
    driver.streamDestroy(stream);
  }
  driver.primaryCtxRelease(ordinal);
}

/// Faults in kernels (illegal address, launch failure, traps, ...) are
/// sticky: the context stays unusable, also for a device created later.
static ErrorKind errorKindOf(CUresult result) {
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    return ErrorKind::OutOfMemory;
  bool sticky = result == CUDA_ERROR_ILLEGAL_ADDRESS ||
                (result >= CUDA_ERROR_HARDWARE_STACK_ERROR && result <= CUDA_ERROR_LAUNCH_FAILED);
  return sticky ? ErrorKind::DevicePoisoned : ErrorKind::Launch;
}

Expected<std::unique_ptr<CudaDevice>> CudaDevice::create(int index) {
  const CudaDriver &d = CudaDriver::get();
  if (index < 0 || index >= d.count)
    return makeError(ErrorKind::InvalidArgument,
                     "device cuda:" + std::to_string(index) + " does not exist (" +
                         (d.count ? std::to_string(d.count) + " CUDA device(s)"
                                  : d.unavailable) +
                         ")");
  auto fail = [&](CUresult r, const char *what) {
    return makeError(errorKindOf(r), "cuda:" + std::to_string(index) + ": " + what + ": " +
                                         d.describe(r));
  };
  CUdevice device;
  if (CUresult r = d.deviceGet(&device, index))
    return fail(r, "cuDeviceGet");
  CudaDeviceProperties p;
  char name[256] = {};
  d.deviceGetName(name, sizeof name, device);
  p.name = name;
  d.deviceGetAttribute(&p.computeMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  d.deviceGetAttribute(&p.computeMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  d.deviceGetAttribute(&p.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  d.deviceGetAttribute(&p.maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device);
  d.deviceGetAttribute(&p.warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device);
  d.deviceGetAttribute(&p.sharedMemoryPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, device);
  d.deviceGetAttribute(&p.sharedMemoryPerBlockOptIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device);
  d.deviceTotalMem(&p.totalMemory, device);
  CUcontext context;
  if (CUresult r = d.primaryCtxRetain(&context, device))
    return fail(r, "cuDevicePrimaryCtxRetain");
  d.ctxSetCurrent(context);
  CUstream stream;
  if (CUresult r = d.streamCreate(&stream, 0)) {
    d.primaryCtxRelease(device);
    return fail(r, "cuStreamCreate");
  }
  return std::unique_ptr<CudaDevice>(
      new CudaDevice(d, device, context, stream, std::move(p)));
}

Expected<void> CudaDevice::check(int result, const char *what) {
  if (result == CUDA_SUCCESS)
    return {};
  std::string where = "cuda:" + std::to_string(ordinal) + ": " + what + ": " +
                      driver.describe(result);
  ErrorKind kind = errorKindOf(result);
  if (kind == ErrorKind::DevicePoisoned) {
    isPoisoned = true;
    where += "; the device must be recreated";
  }
  return makeError(kind, where);
}

namespace {
std::unexpected<Error> poisonedError(int ordinal, const std::string &reason) {
  return makeError(ErrorKind::DevicePoisoned,
                   "cuda:" + std::to_string(ordinal) + " is poisoned by " +
                       (reason.empty() ? "an earlier kernel fault" : reason) + "; recreate it");
}
} // namespace

#define KILN_CUDA_PRELUDE                                                      \
  if (isPoisoned)                                                              \
    return poisonedError(ordinal, poisonReason);                               \
  driver.ctxSetCurrent(context)

void CudaDevice::poison(std::string reason) {
  static std::mutex mutex; // two watchdogs may poison at once
  std::lock_guard lock(mutex);
  if (isPoisoned)
    return; // the first reason stays
  poisonReason = std::move(reason);
  isPoisoned = true;
}

Expected<void *> CudaDevice::loadModule(std::string_view image) {
  KILN_CUDA_PRELUDE;
  std::string source(image); // PTX must be NUL-terminated
  std::vector<char> log(8192, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  CUmodule module = nullptr;
  CUresult r = driver.moduleLoadDataEx(&module, source.c_str(), 2, options, values);
  if (r != CUDA_SUCCESS) {
    auto error = check(r, "cuModuleLoadDataEx");
    if (!error && error.error().kind == ErrorKind::Launch)
      error.error().kind = ErrorKind::Compile;
    error.error().message += std::string("\n") + log.data();
    return std::unexpected(error.error());
  }
  return module;
}

Expected<std::string> CudaDevice::compileToCubin(std::string_view ptx) {
  KILN_CUDA_PRELUDE;
  std::string source(ptx); // PTX must be NUL-terminated, the NUL counted
  std::vector<char> log(8192, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  CUlinkState link = nullptr;
  auto failed = [&](CUresult r, const char *what) {
    auto error = check(r, what);
    if (error.error().kind == ErrorKind::Launch)
      error.error().kind = ErrorKind::Compile;
    error.error().message += std::string("\n") + log.data();
    return std::unexpected(error.error());
  };
  // The link targets the current context's device (the driver's default).
  if (CUresult r = driver.linkCreate(2, options, values, &link); r != CUDA_SUCCESS)
    return failed(r, "cuLinkCreate");
  void *cubin = nullptr;
  size_t bytes = 0;
  CUresult r = driver.linkAddData(link, CU_JIT_INPUT_PTX, source.data(), source.size() + 1,
                                  "kernel.ptx", 0, nullptr, nullptr);
  const char *what = "cuLinkAddData";
  if (r == CUDA_SUCCESS)
    r = driver.linkComplete(link, &cubin, &bytes), what = "cuLinkComplete";
  // The cubin belongs to the link state: copy it out before destroying that.
  std::string image = r == CUDA_SUCCESS ? std::string(static_cast<char *>(cubin), bytes) : "";
  driver.linkDestroy(link);
  if (r != CUDA_SUCCESS)
    return failed(r, what);
  return image;
}

Expected<CudaKernel> CudaDevice::kernel(void *module, const std::string &name) {
  KILN_CUDA_PRELUDE;
  CudaKernel k;
  if (auto ok = check(driver.moduleGetFunction(&k.function, module, name.c_str()),
                      "cuModuleGetFunction");
      !ok)
    return std::unexpected(ok.error());
  return k;
}

Expected<void> CudaDevice::allowSharedMemory(CudaKernel kernel, unsigned bytes) {
  KILN_CUDA_PRELUDE;
  if (bytes > static_cast<unsigned>(props.sharedMemoryPerBlockOptIn))
    return makeError(ErrorKind::Unsupported,
                     "cuda:" + std::to_string(ordinal) + ": a kernel needs " +
                         std::to_string(bytes) + " bytes of shared memory, " + props.name +
                         " allows " + std::to_string(props.sharedMemoryPerBlockOptIn));
  return check(driver.funcSetAttribute(kernel.function,
                                       CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                       static_cast<int>(bytes)),
               "cuFuncSetAttribute");
}

Expected<TiledTensorMap> tiledTensorMap(const TensorMapArgument &map, uint64_t bufferAddress) {
  const BufferView &view = map.view;
  const size_t rank = view.sizes.size();
  auto unsupported = [](const std::string &why) {
    return makeError(ErrorKind::Unsupported, "tensor map: " + why);
  };
  if (view.strides.size() != rank || map.box.size() != rank)
    return makeError(ErrorKind::InvalidArgument,
                     "tensor map: " + std::to_string(rank) + " dims, but " +
                         std::to_string(view.strides.size()) + " strides and " +
                         std::to_string(map.box.size()) + " box sizes");
  if (rank == 0 || rank > 5)
    return unsupported("TMA takes 1 to 5 dims, not " + std::to_string(rank));
  const uint64_t bytes = map.elementBytes;
  TiledTensorMap t;
  switch (bytes) {
  case 1: t.dataType = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
  case 2: t.dataType = CU_TENSOR_MAP_DATA_TYPE_UINT16; break;
  case 4: t.dataType = CU_TENSOR_MAP_DATA_TYPE_UINT32; break;
  case 8: t.dataType = CU_TENSOR_MAP_DATA_TYPE_UINT64; break;
  default: return unsupported("elements of " + std::to_string(bytes) + " bytes");
  }
  switch (map.swizzleBytes) {
  case 0: t.swizzle = 0; break;
  case 32: t.swizzle = 1; break;
  case 64: t.swizzle = 2; break;
  case 128: t.swizzle = 3; break;
  default: return unsupported("a swizzle of " + std::to_string(map.swizzleBytes) + " bytes");
  }
  t.rank = rank;
  if (view.offset < 0)
    return makeError(ErrorKind::InvalidArgument, "tensor map: a negative view offset");
  t.address = bufferAddress + uint64_t(view.offset) * bytes;
  if (t.address % 16)
    return unsupported("the view starts at " + std::to_string(t.address) +
                       ", not a multiple of 16 bytes");
  for (size_t i = 0; i < rank; ++i) {
    size_t d = rank - 1 - i; // the view's dims, outermost first
    int64_t size = view.sizes[d], stride = view.strides[d], box = map.box[d];
    if (size <= 0 || box <= 0)
      return makeError(ErrorKind::InvalidArgument,
                       "tensor map: dim " + std::to_string(d) + " of size " +
                           std::to_string(size) + " and box " + std::to_string(box));
    if (size > (int64_t(1) << 32) || box > 256)
      return unsupported("dim " + std::to_string(d) + " of " + std::to_string(size) +
                         " with a box of " + std::to_string(box) +
                         " (at most 2^32 and 256)");
    t.dims[i] = size;
    t.box[i] = box;
    if (i == 0) {
      if (stride != 1)
        return unsupported("an innermost dim of stride " + std::to_string(stride));
      if (map.swizzleBytes && uint64_t(box) * bytes > map.swizzleBytes)
        return unsupported("an inner box of " + std::to_string(box * bytes) +
                           " bytes, past its " + std::to_string(map.swizzleBytes) +
                           "-byte swizzle");
      if (uint64_t(box) * bytes % 16)
        return unsupported("an inner box of " + std::to_string(box * bytes) +
                           " bytes, not a multiple of 16");
      continue;
    }
    uint64_t strideBytes = uint64_t(stride) * bytes;
    if (stride <= 0 || strideBytes % 16 || strideBytes >= (uint64_t(1) << 40))
      return unsupported("dim " + std::to_string(d) + " of stride " +
                         std::to_string(stride) +
                         " elements (positive multiples of 16 bytes below 2^40)");
    t.strides[i - 1] = strideBytes;
  }
  return t;
}

Expected<CudaTensorMap> CudaDevice::encodeTensorMap(const TensorMapArgument &map,
                                                    uint64_t bufferAddress) {
  auto t = tiledTensorMap(map, bufferAddress);
  if (!t)
    return std::unexpected(t.error());
  if (!driver.tensorMapEncodeTiled)
    return makeError(ErrorKind::Unsupported,
                     "tensor map: this CUDA driver has no cuTensorMapEncodeTiled (CUDA 12+)");
  CUtensorMap encoded;
  const std::array<uint32_t, 5> unitSteps{1, 1, 1, 1, 1};
  CUresult r = driver.tensorMapEncodeTiled(
      &encoded, t->dataType, t->rank, reinterpret_cast<void *>(t->address), t->dims.data(),
      t->strides.data(), t->box.data(), unitSteps.data(), CU_TENSOR_MAP_INTERLEAVE_NONE,
      t->swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return makeError(ErrorKind::InvalidArgument,
                     "cuTensorMapEncodeTiled: " + driver.describe(r));
  CudaTensorMap result;
  static_assert(sizeof encoded == sizeof result.bits);
  std::memcpy(result.bits.data(), &encoded, sizeof encoded);
  return result;
}

Expected<void> CudaDevice::launch(CudaKernel kernel, const LaunchShape &s,
                                  std::vector<void *> &args) {
  KILN_CUDA_PRELUDE;
  return check(driver.launchKernel(kernel.function, s.grid[0], s.grid[1], s.grid[2],
                                   s.block[0], s.block[1], s.block[2],
                                   s.sharedMemoryBytes, stream, args.data(), nullptr),
               "cuLaunchKernel");
}

Expected<uint64_t> CudaDevice::allocate(size_t bytes) {
  KILN_CUDA_PRELUDE;
  CUdeviceptr p = 0;
  if (auto ok = check(driver.memAlloc(&p, bytes ? bytes : 1), "cuMemAlloc"); !ok)
    return std::unexpected(ok.error());
  return p;
}

Expected<void> CudaDevice::free(uint64_t pointer) {
  KILN_CUDA_PRELUDE;
  return check(driver.memFree(pointer), "cuMemFree");
}

Expected<void> CudaDevice::copyToDevice(uint64_t dst, const void *src, size_t bytes) {
  KILN_CUDA_PRELUDE;
  return check(driver.memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD");
}

Expected<void> CudaDevice::copyToHost(void *dst, uint64_t src, size_t bytes) {
  KILN_CUDA_PRELUDE;
  return check(driver.memcpyDtoH(dst, src, bytes), "cuMemcpyDtoH");
}

Expected<void *> CudaDevice::allocatePinned(size_t bytes) {
  KILN_CUDA_PRELUDE;
  void *p = nullptr;
  if (auto ok = check(driver.memHostAlloc(&p, bytes ? bytes : 1, 0), "cuMemHostAlloc"); !ok)
    return std::unexpected(ok.error());
  return p;
}

Expected<void> CudaDevice::freePinned(void *pointer) {
  KILN_CUDA_PRELUDE;
  return check(driver.memFreeHost(pointer), "cuMemFreeHost");
}

Expected<void> CudaDevice::sync() {
  KILN_CUDA_PRELUDE;
  if (auto ok = check(driver.streamSynchronize(stream), "cuStreamSynchronize"); !ok)
    return ok;
  // Poisoned while waiting (a collective aborted by its watchdog).
  if (isPoisoned)
    return poisonedError(ordinal, poisonReason);
  return {};
}

Expected<void *> CudaDevice::currentStream() {
  KILN_CUDA_PRELUDE;
  return stream;
}

Expected<void *> CudaDevice::recordEvent() {
  KILN_CUDA_PRELUDE;
  void *event = nullptr;
  if (auto ok = check(driver.eventCreate(&event, 0), "cuEventCreate"); !ok)
    return std::unexpected(ok.error());
  if (auto ok = check(driver.eventRecord(event, stream), "cuEventRecord"); !ok) {
    driver.eventDestroy(event);
    return std::unexpected(ok.error());
  }
  return event;
}

Expected<double> CudaDevice::elapsedMs(void *start, void *end) {
  KILN_CUDA_PRELUDE;
  if (auto ok = sync(); !ok)
    return std::unexpected(ok.error());
  float ms = 0;
  if (auto ok = check(driver.eventElapsedTime(&ms, start, end), "cuEventElapsedTime"); !ok)
    return std::unexpected(ok.error());
  return ms;
}

void CudaDevice::destroyEvent(void *event) {
  driver.ctxSetCurrent(context);
  driver.eventDestroy(event);
}

Expected<bool> CudaDevice::eventDone(void *event) {
  KILN_CUDA_PRELUDE;
  CUresult r = driver.eventQuery(event);
  if (r == CUDA_ERROR_NOT_READY)
    return false;
  if (auto ok = check(r, "cuEventQuery"); !ok)
    return std::unexpected(ok.error());
  return true;
}

Expected<void> CudaDevice::beginCapture() {
  KILN_CUDA_PRELUDE;
  // Relaxed: allocations may happen meanwhile.
  return check(driver.streamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
               "cuStreamBeginCapture");
}

Expected<void *> CudaDevice::endCapture() {
  KILN_CUDA_PRELUDE;
  void *graph = nullptr, *exec = nullptr;
  if (auto ok = check(driver.streamEndCapture(stream, &graph), "cuStreamEndCapture"); !ok)
    return std::unexpected(ok.error());
  auto ok = check(driver.graphInstantiate(&exec, graph, 0), "cuGraphInstantiate");
  driver.graphDestroy(graph); // the executable graph stands alone
  if (!ok)
    return std::unexpected(ok.error());
  return exec;
}

Expected<void> CudaDevice::launchGraph(void *graph) {
  KILN_CUDA_PRELUDE;
  return check(driver.graphLaunch(graph, stream), "cuGraphLaunch");
}

void CudaDevice::destroyGraph(void *graph) {
  driver.ctxSetCurrent(context);
  driver.graphExecDestroy(graph);
}

#undef KILN_CUDA_PRELUDE

} // namespace kiln
