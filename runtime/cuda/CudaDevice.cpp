//===- CudaDevice.cpp - NVIDIA GPUs through the CUDA driver API ----------===//
#include "kiln/runtime/cuda/CudaDevice.h"

#include <dlfcn.h>

namespace kiln {

// The few driver types and constants kiln uses (cuda.h), so that kiln builds
// without the CUDA toolkit and never links the driver.
using CUresult = int;
using CUdevice = int;
using CUcontext = void *;
using CUstream = void *;
using CUmodule = void *;
using CUfunction = void *;
using CUdeviceptr = unsigned long long;
enum : int {
  kCudaSuccess = 0,
  kCudaOutOfMemory = 2,
  kCudaNoDevice = 100,
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferSize = 6,
  kJitInputPtx = 1,
  kAttrMaxThreadsPerBlock = 1,
  kAttrSharedPerBlock = 8,
  kAttrWarpSize = 10,
  kAttrMultiprocessors = 16,
  kAttrComputeMajor = 75,
  kAttrComputeMinor = 76,
  kAttrSharedPerBlockOptIn = 97,
};

struct CudaDriver {
  CUresult (*init)(unsigned);
  CUresult (*deviceGetCount)(int *);
  CUresult (*deviceGet)(CUdevice *, int);
  CUresult (*deviceGetName)(char *, int, CUdevice);
  CUresult (*deviceGetAttribute)(int *, int, CUdevice);
  CUresult (*deviceTotalMem)(size_t *, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*primaryCtxRelease)(CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*streamCreate)(CUstream *, unsigned);
  CUresult (*streamDestroy)(CUstream);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*moduleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*linkCreate)(unsigned, int *, void **, void **);
  CUresult (*linkAddData)(void *, int, void *, size_t, const char *, unsigned, int *, void **);
  CUresult (*linkComplete)(void *, void **, size_t *);
  CUresult (*linkDestroy)(void *);
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*memAlloc)(CUdeviceptr *, size_t);
  CUresult (*memFree)(CUdeviceptr);
  CUresult (*memcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*memcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*memHostAlloc)(void **, size_t, unsigned);
  CUresult (*memFreeHost)(void *);
  CUresult (*funcSetAttribute)(CUfunction, int, int);
  CUresult (*eventCreate)(void **, unsigned);
  CUresult (*eventRecord)(void *, CUstream);
  CUresult (*eventElapsedTime)(float *, void *, void *);
  CUresult (*eventDestroy)(void *);
  CUresult (*streamBeginCapture)(CUstream, int);
  CUresult (*streamEndCapture)(CUstream, void **);
  CUresult (*graphInstantiate)(void **, void *, unsigned long long);
  CUresult (*graphLaunch)(void *, CUstream);
  CUresult (*graphDestroy)(void *);
  CUresult (*graphExecDestroy)(void *);
  CUresult (*getErrorName)(CUresult, const char **);
  CUresult (*getErrorString)(CUresult, const char **);

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
    bool missing = false;
    auto bind = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn && !missing) {
        missing = true;
        d.unavailable = std::string("libcuda.so.1 has no ") + name;
      }
    };
    bind(d.init, "cuInit");
    bind(d.deviceGetCount, "cuDeviceGetCount");
    bind(d.deviceGet, "cuDeviceGet");
    bind(d.deviceGetName, "cuDeviceGetName");
    bind(d.deviceGetAttribute, "cuDeviceGetAttribute");
    bind(d.deviceTotalMem, "cuDeviceTotalMem_v2");
    bind(d.primaryCtxRetain, "cuDevicePrimaryCtxRetain");
    bind(d.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    bind(d.ctxSetCurrent, "cuCtxSetCurrent");
    bind(d.streamCreate, "cuStreamCreate");
    bind(d.streamDestroy, "cuStreamDestroy_v2");
    bind(d.streamSynchronize, "cuStreamSynchronize");
    bind(d.moduleLoadDataEx, "cuModuleLoadDataEx");
    bind(d.moduleGetFunction, "cuModuleGetFunction");
    bind(d.linkCreate, "cuLinkCreate_v2");
    bind(d.linkAddData, "cuLinkAddData_v2");
    bind(d.linkComplete, "cuLinkComplete");
    bind(d.linkDestroy, "cuLinkDestroy");
    bind(d.launchKernel, "cuLaunchKernel");
    bind(d.memAlloc, "cuMemAlloc_v2");
    bind(d.memFree, "cuMemFree_v2");
    bind(d.memcpyHtoD, "cuMemcpyHtoD_v2");
    bind(d.memcpyDtoH, "cuMemcpyDtoH_v2");
    bind(d.memHostAlloc, "cuMemHostAlloc");
    bind(d.memFreeHost, "cuMemFreeHost");
    bind(d.funcSetAttribute, "cuFuncSetAttribute");
    bind(d.eventCreate, "cuEventCreate");
    bind(d.eventRecord, "cuEventRecord");
    bind(d.eventElapsedTime, "cuEventElapsedTime_v2");
    bind(d.eventDestroy, "cuEventDestroy_v2");
    bind(d.streamBeginCapture, "cuStreamBeginCapture_v2");
    bind(d.streamEndCapture, "cuStreamEndCapture");
    bind(d.graphInstantiate, "cuGraphInstantiateWithFlags");
    bind(d.graphLaunch, "cuGraphLaunch");
    bind(d.graphDestroy, "cuGraphDestroy");
    bind(d.graphExecDestroy, "cuGraphExecDestroy");
    bind(d.getErrorName, "cuGetErrorName");
    bind(d.getErrorString, "cuGetErrorString");
    if (missing)
      return d;
    if (CUresult r = d.init(0); r != kCudaSuccess) {
      d.unavailable = "cuInit failed: " + d.describe(r);
      return d;
    }
    if (d.deviceGetCount(&d.count) != kCudaSuccess || d.count == 0) {
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
  if (result == kCudaOutOfMemory)
    return ErrorKind::OutOfMemory;
  bool sticky = result == 700 || (result >= 714 && result <= 719);
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
  d.deviceGetAttribute(&p.computeMajor, kAttrComputeMajor, device);
  d.deviceGetAttribute(&p.computeMinor, kAttrComputeMinor, device);
  d.deviceGetAttribute(&p.multiprocessors, kAttrMultiprocessors, device);
  d.deviceGetAttribute(&p.maxThreadsPerBlock, kAttrMaxThreadsPerBlock, device);
  d.deviceGetAttribute(&p.warpSize, kAttrWarpSize, device);
  d.deviceGetAttribute(&p.sharedMemoryPerBlock, kAttrSharedPerBlock, device);
  d.deviceGetAttribute(&p.sharedMemoryPerBlockOptIn, kAttrSharedPerBlockOptIn, device);
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
  if (result == kCudaSuccess)
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
std::unexpected<Error> poisonedError(int ordinal) {
  return makeError(ErrorKind::DevicePoisoned,
                   "cuda:" + std::to_string(ordinal) +
                       " is poisoned by an earlier kernel fault; recreate it");
}
} // namespace

#define KILN_CUDA_PRELUDE                                                      \
  if (isPoisoned)                                                              \
    return poisonedError(ordinal);                                             \
  driver.ctxSetCurrent(context)

Expected<void *> CudaDevice::loadModule(std::string_view image) {
  KILN_CUDA_PRELUDE;
  std::string source(image); // PTX must be NUL-terminated
  std::vector<char> log(8192, '\0');
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  CUmodule module = nullptr;
  CUresult r = driver.moduleLoadDataEx(&module, source.c_str(), 2, options, values);
  if (r != kCudaSuccess) {
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
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSize};
  void *values[] = {log.data(), reinterpret_cast<void *>(log.size())};
  void *link = nullptr;
  auto failed = [&](CUresult r, const char *what) {
    auto error = check(r, what);
    if (error.error().kind == ErrorKind::Launch)
      error.error().kind = ErrorKind::Compile;
    error.error().message += std::string("\n") + log.data();
    return std::unexpected(error.error());
  };
  // The link targets the current context's device (the driver's default).
  if (CUresult r = driver.linkCreate(2, options, values, &link); r != kCudaSuccess)
    return failed(r, "cuLinkCreate");
  void *cubin = nullptr;
  size_t bytes = 0;
  CUresult r = driver.linkAddData(link, kJitInputPtx, source.data(), source.size() + 1,
                                  "kernel.ptx", 0, nullptr, nullptr);
  const char *what = "cuLinkAddData";
  if (r == kCudaSuccess)
    r = driver.linkComplete(link, &cubin, &bytes), what = "cuLinkComplete";
  // The cubin belongs to the link state: copy it out before destroying that.
  std::string image = r == kCudaSuccess ? std::string(static_cast<char *>(cubin), bytes) : "";
  driver.linkDestroy(link);
  if (r != kCudaSuccess)
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
  constexpr int kMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  return check(driver.funcSetAttribute(kernel.function, kMaxDynamicSharedBytes,
                                       static_cast<int>(bytes)),
               "cuFuncSetAttribute");
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
  return check(driver.streamSynchronize(stream), "cuStreamSynchronize");
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

Expected<void> CudaDevice::beginCapture() {
  KILN_CUDA_PRELUDE;
  constexpr int kCaptureModeRelaxed = 2; // allocations may happen meanwhile
  return check(driver.streamBeginCapture(stream, kCaptureModeRelaxed), "cuStreamBeginCapture");
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
