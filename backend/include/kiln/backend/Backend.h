//===- Backend.h - the backend frameworks call, over every device -*- C++ -*-===//
//
// One Backend per device (cpu:0, cuda:N, vulkan:N) with the contract
// frameworks build on (docs/backend.md): tensors living on the device, the dialect's ops dispatched to
// it through the engine's kernel cache, sync/flush, profiling windows,
// graph capture and replay, memory pools and their reports, pinned staging,
// dtype queries. Launches are queued (CUDA: on the device's stream) and
// errors of queued work surface on the next sync or read.
//
// Where tensors live: device memory from the device's pool on CUDA and
// Vulkan (VkBuffer pages), pooled host pages on the CPU.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_BACKEND_H
#define KILN_BACKEND_BACKEND_H

#include "kiln/backend/Engine.h"
#include "kiln/backend/OpKey.h"
#include "kiln/runtime/common/MemoryPool.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>

namespace kiln {

class DeviceQueue;
struct TensorStorage;

/// A tensor on one device: element type, shape, and a buffer from the
/// memory of the backend that made it (given back when the last Tensor
/// naming it goes). Only that backend uses it: another one, even of the same
/// device, refuses it.
class Tensor {
public:
  Tensor() = default;
  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  const DeviceId &device() const { return deviceId; }
  int64_t numElements() const;
  size_t bytes() const { return numElements() * dtypeSize(type); }
  bool valid() const { return storage != nullptr; }

private:
  friend class Backend;
  DType type = DType::F32;
  std::vector<int64_t> dims;
  DeviceId deviceId;
  std::shared_ptr<TensorStorage> storage;
};

/// A symmetric int8 quantized tensor: values ~ q * scale, with one scale
/// (rank-0 `scale`) or one per block of `blockSize` along the last dim.
struct QuantizedTensor {
  Tensor values; // i8
  Tensor scale;  // f32, f16 or bf16
  int64_t blockSize = 0; // 0: per tensor
};

/// A profiling window, opened on one stream of one device.
struct ProfileToken {
  uint64_t id = 0;
  uint64_t stream = 0;
};

/// The device time of a window; no value: the window could not be measured
/// (it is never reported as zero instead).
struct ProfileDuration {
  std::optional<double> milliseconds;
  std::string clock; // "cuda-events", "host"
};

/// A captured sequence of launches, tagged with the device it was captured on.
class Graph {
public:
  const DeviceId &device() const { return deviceId; }
  size_t launchCount() const;
  struct Recording;

private:
  friend class Backend;
  DeviceId deviceId;
  std::shared_ptr<Recording> recording;
};

/// Page-locked host memory for transfers (CUDA); plain host memory elsewhere.
class StagingBuffer {
public:
  void *data() const { return pointer.get(); }
  size_t size() const { return bytes; }

private:
  friend class Backend;
  std::shared_ptr<void> pointer;
  size_t bytes = 0;
};

class Backend {
public:
  /// Devices of a kind on this machine; 0, not an error, where none exist.
  static int deviceCount(DeviceType type);
  static Expected<std::unique_ptr<Backend>> create(DeviceId device);
  /// The process's backend of a device, made on first use: how work on a
  /// tensor it made reaches the device (`shared(tensor.device())`).
  static Expected<std::shared_ptr<Backend>> shared(DeviceId device);
  ~Backend();

  /// "cuda:0 (NVIDIA H200)".
  std::string name() const;
  const DeviceId &device() const;
  Engine &kernels();
  /// Random ops draw from this seed: the same seed gives the same sequence.
  void seed(uint64_t seed);
  /// Waits for queued work; a device fault makes it (and every later call)
  /// device_poisoned.
  Expected<void> sync();
  /// Pushes queued work to the device without waiting.
  Expected<void> flush();

  Expected<Tensor> upload(const HostTensor &host);
  /// Waits for the work that writes `tensor`, then copies it out.
  Expected<HostTensor> download(const Tensor &tensor);
  /// Overwrites `tensor` with `host` (same dtype and shape); how inputs of a
  /// captured graph are refreshed between replays.
  Expected<void> write(const Tensor &tensor, const HostTensor &host);
  /// A tensor over memory kiln did not allocate (DLPack imports): `address`
  /// in this device's memory (a host pointer on the CPU, a device pointer on
  /// CUDA), at least 16-byte aligned (kernels assume it), holding a dense
  /// row-major tensor of `type` and `shape`. `owner` keeps the memory alive
  /// until the last Tensor naming it goes. Vulkan memory is not adoptable.
  Expected<Tensor> adopt(uint64_t address, DType type, std::vector<int64_t> shape,
                         std::shared_ptr<void> owner);
  /// Where `tensor`'s data lives in this device's memory, to hand it to
  /// another library (DLPack exports), once the queued work that writes it
  /// is done: any stream of the device may then use it.
  Expected<uint64_t> dataAddress(const Tensor &tensor);
  /// Runs a kiln program (its @main) on tensors of this device. With
  /// KILN_AUTOTUNE=on, its kernels without a tune entry are tuned first.
  Expected<std::vector<Tensor>> run(std::string_view program, const std::vector<Tensor> &inputs,
                                    const CompileOptions &options = {});
  /// One op: `op` as in the dialect ("kiln.add"), `attrs` as its attribute
  /// dictionary body ("dims = array<i64: 1>"), the result's type given.
  /// kiln.random_uniform and kiln.random_normal given no inputs take the
  /// next key of the backend's seed (randomKey()) as their seed operand.
  Expected<Tensor> apply(std::string_view op, const std::vector<Tensor> &inputs,
                         DType resultType, const std::vector<int64_t> &resultShape,
                         std::string_view attrs = {});
  /// Automatic dynamic shapes in apply (docs/dynamic-shapes.md): an op
  /// signature (op, attrs, dtypes, ranks) called at a second size of a dim
  /// takes a kernel dynamic in that dim from then on, as torch.compile's
  /// automatic dynamic shapes do. On unless KILN_AUTO_DYNAMIC=0.
  void setAutoDynamic(bool on) { autoDynamicShapes = on; }
  bool autoDynamic() const { return autoDynamicShapes; }
  /// kiln.quantize with `scale` (its shape says per tensor or per block).
  Expected<QuantizedTensor> quantize(const Tensor &x, const Tensor &scale);
  /// kiln.dequantize to f32.
  Expected<Tensor> dequantize(const QuantizedTensor &q);
  /// kiln.random_uniform drawn from the backend's seed.
  Expected<Tensor> randomUniform(DType type, const std::vector<int64_t> &shape,
                                 double low, double high);
  /// kiln.random_normal drawn from the backend's seed.
  Expected<Tensor> randomNormal(DType type, const std::vector<int64_t> &shape,
                                double mean, double std);
  /// The next key of the seed's sequence (splitmix64 of the seed and the
  /// draw number) as a tensor<i64>: the seed operand of a random op, also
  /// for a program run with run().
  Expected<Tensor> randomKey();

  /// Runs `work` inside a profiling window; a failure of `work` abandons
  /// the window and is returned.
  Expected<ProfileDuration> profile(const std::function<Expected<void>()> &work);
  Expected<ProfileToken> profileStart();
  Expected<ProfileDuration> profileEnd(ProfileToken token);
  void profileAbandon(ProfileToken token);

  /// Allocations from here on are persistent (exact size, outside the
  /// pool), so a graph's buffers stay where the capture saw them.
  Expected<void> graphPrepare();
  Expected<void> graphStartCapture();
  Expected<Graph> graphStopCapture();
  /// Replays on this backend's device; a graph of another device is refused.
  Expected<void> graphReplay(const Graph &graph);

  void memoryPersistentAllocations(bool persistent) { persistentAllocations = persistent; }
  /// Gives the pool's free pages back to the device.
  void memoryCleanup();
  std::vector<PoolReport> memoryPoolReport() const;
  MemoryUsage memoryPoolUsage() const;
  /// A staging buffer of `bytes` for transfers.
  Expected<StagingBuffer> staging(size_t bytes);

  bool supportsDtype(const DataType &type) const;
  DTypeUsageSet dtypeUsage(const DataType &type) const;

private:
  friend class Communicator;
  explicit Backend(std::shared_ptr<DeviceQueue> queue);
  /// For collectives, which NCCL queues on the device's stream itself:
  /// where `tensor` lives; a capture running now keeps its buffer.
  uint64_t collectiveAddress(const Tensor &tensor);
  /// The capture running now (null: none), and work its graph does after
  /// each replay (a communicator watching its collectives).
  const void *runningCapture() const { return capturing.get(); }
  void afterEachReplay(std::function<Expected<void>()> hook);
  Expected<Tensor> allocate(DType type, std::vector<int64_t> shape);
  /// The program compiled by the engine; with KILN_AUTOTUNE=on, its
  /// untuned kernels are tuned (once per process) and it is compiled again.
  Expected<std::shared_ptr<Program>> compile(std::string_view source,
                                             const CompileOptions &options = {});
  /// Runs a compiled program on tensors of this device (checked).
  Expected<std::vector<Tensor>> launch(const std::shared_ptr<Program> &program,
                                       const std::vector<Tensor> &inputs);
  /// What apply has seen of one op signature (op, attrs, dtypes, ranks):
  /// the dims of its first call (the result's, then each input's), which
  /// of them have had another size since, its dynamic kernels by which
  /// dims are `?`, and whether the op has them (a dynamic compile failed).
  struct AppliedSignature {
    std::vector<int64_t> firstDims;
    std::vector<bool> changed;
    std::map<std::vector<bool>, std::shared_ptr<Program>> programs;
    bool dynamicCompiles = true;
  };
  /// apply's program for a call its cache (`key`) does not hold: a
  /// dynamic one where automatic dynamic says so, else compiled for the
  /// call's types and kept under `key`.
  Expected<std::shared_ptr<Program>> appliedProgram(const OpKey &key, std::string_view op,
                                                    const std::vector<Tensor> &inputs,
                                                    DType resultType,
                                                    const std::vector<int64_t> &resultShape,
                                                    std::string_view attrs);
  /// The call's signature, its changed dims noted, where automatic dynamic
  /// is on and the op may take a dynamic kernel; null on its first call.
  AppliedSignature *autoDynamicSignature(std::string_view op, std::string_view attrs,
                                         const std::vector<DType> &types,
                                         const std::vector<std::vector<int64_t>> &shapes);
  Expected<void> checkUsable() const;
  /// `tensor` is one this backend made (named `what`, with `index` if
  /// given, in the error; a passing check builds no message).
  Expected<void> checkOwned(const Tensor &tensor, std::string_view what,
                            std::optional<size_t> index = {}) const;
  /// Usable, and every input a tensor of this device.
  Expected<void> checkInputs(const std::vector<Tensor> &inputs) const;

  std::shared_ptr<DeviceQueue> queue; // tensors and graphs keep it alive
  bool persistentAllocations = false;
  std::shared_ptr<Graph::Recording> capturing; // set between start and stop
  uint64_t seedValue = 0, randomDraws = 0;
  struct Window {
    std::shared_ptr<void> start;
    bool measurable = true; // false once a capture ran inside it
  };
  std::map<uint64_t, Window> openWindows;
  OpKey::Map<std::shared_ptr<Program>> appliedOps; // by op and types (OpKey.h)
  std::unordered_map<std::string, AppliedSignature> appliedSignatures;
  bool autoDynamicShapes;
  uint64_t nextWindow = 1;
};

} // namespace kiln

#endif
