//===- Target.h - one kind of device, behind one interface -------*- C++ -*-===//
//
// A Target is one opened device as the backend sees it: what generated
// code depends on (fingerprint), what it can do (capabilities), how a
// program is compiled for it and loaded, and the queue tensors live in.
// A TargetKind is one kind of device (cpu, cuda, vulkan): its name, how
// many devices it has, how to open one, and how to compile for its default
// device without one. Each kind lives in backend/lib/targets/<kind>/; the
// registry (targets/Registry.cpp) is the only place that lists them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_TARGET_H
#define KILN_BACKEND_TARGET_H

#include "kiln/Lowering/Compiler.h"
#include "kiln/backend/Capabilities.h"
#include "kiln/runtime/vulkan/VulkanDevice.h"

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace kiln {

class CudaDevice;
class DeviceQueue;
class Engine;
class Program;
struct CachedProgram;

/// The kinds of device kiln runs on (each with its TargetKind in the registry).
enum class DeviceType { Cpu, Cuda, Vulkan };

class Target {
public:
  virtual ~Target() = default;
  /// The device's model: "NVIDIA H200", "host".
  virtual std::string model() const = 0;
  /// What generated code depends on: part of every kernel cache key.
  virtual const std::string &fingerprint() const = 0;
  virtual DeviceCapabilities capabilities() const = 0;
  /// Whether device memory has addresses another library can use (DLPack,
  /// Backend::adopt): host and CUDA pointers do, Vulkan buffers do not.
  virtual bool sharesAddresses() const { return true; }
  /// The CUDA device behind the target, on whose stream NCCL queues
  /// collectives (backend/Distributed.h); null for other kinds.
  virtual CudaDevice *cudaDevice() { return nullptr; }
  /// `options` with what this device chooses where the caller left the
  /// choice open (CUDA: ptxas); part of the kernel cache key.
  virtual CompileOptions withDeviceDefaults(CompileOptions options) const { return options; }
  /// Compiles `program` (parsed once by `compiler`) for this device, the
  /// options completed with what the device says, and loads the result;
  /// `cached` receives what the disk cache keeps of it.
  virtual Expected<std::shared_ptr<Program>> compile(Compiler &compiler, ParsedProgram program,
                                                     const CompileOptions &options,
                                                     CachedProgram &cached) = 0;
  /// Loads a program the disk cache kept (no compiler, no MLIR).
  virtual Expected<std::shared_ptr<Program>> load(const CachedProgram &cached) = 0;
  /// The queue a backend of this device works through; it keeps `engine`
  /// (which owns this target) alive.
  virtual Expected<std::shared_ptr<DeviceQueue>> makeQueue(std::shared_ptr<Engine> engine) = 0;
};

/// What a compile for a kind's default device made (no device needed).
struct OfflineCompile {
  CompiledProgram program;
  std::string target;    // "sm_90", "vulkan", "cpu"
  std::string artifacts; // "3 PTX module(s), 3 launch(es)"
};

struct TargetKind {
  DeviceType type;
  std::string_view name; // "cuda", as in a device id "cuda:0"
  /// Devices of this kind on this machine; 0, not an error, where none.
  int (*deviceCount)();
  /// Opens device `index`; a missing one is InvalidArgument "... does not exist".
  Expected<std::unique_ptr<Target>> (*open)(int index);
  /// Compiles for the kind's default device as `options` say (kiln-run
  /// --compile-only).
  Expected<OfflineCompile> (*compileOffline)(Compiler &compiler, std::string_view source,
                                             const CompileOptions &options);
};

/// The features and limits SPIR-V for a Vulkan device may use (for tools
/// that compile for a VulkanDevice they opened themselves).
VulkanTarget vulkanTargetOf(const VulkanDeviceProperties &device);

/// Every kind, in the registry's order.
std::span<const TargetKind *const> targetKinds();
const TargetKind &targetKind(DeviceType type);

} // namespace kiln

#endif
