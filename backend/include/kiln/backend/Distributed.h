//===- Distributed.h - collectives on kiln tensors across GPUs ---*- C++ -*-===//
//
// A Communicator is one rank of an NCCL communicator on the CUDA device of
// a Backend (docs/multi-gpu.md). Its collectives take and give tensors of
// that backend and queue on the device's stream, after the kernels that
// write their inputs and before those that read their results; inside a
// graph capture they are captured, and each replay is watched like a
// call. A collective that does not complete within the timeout poisons the
// communicator and the device, with an error naming the op, its sequence
// number and the ranks that did not arrive.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_DISTRIBUTED_H
#define KILN_BACKEND_DISTRIBUTED_H

#include "kiln/backend/Backend.h"
#include "kiln/runtime/cuda/Nccl.h"

#include <chrono>
#include <optional>

namespace kiln {

/// Devices a communicator of this process can use: the CUDA devices, where
/// NCCL loads; 0 otherwise (not an error), and communicatorUnavailableReason
/// says why.
int communicatorDeviceCount();
std::string communicatorUnavailableReason();

class Communicator {
public:
  /// Rank `rank` of `size` on `backend`'s device, all ranks given the same
  /// `id` (one process per GPU). `timeout`: KILN_NCCL_TIMEOUT_MS's unless
  /// given.
  static Expected<std::unique_ptr<Communicator>>
  create(std::shared_ptr<Backend> backend, const NcclUniqueId &id, int rank, int size,
         std::optional<std::chrono::milliseconds> timeout = {});
  /// One communicator over the backends' devices, rank i on backends[i],
  /// driven by this process: call each rank's collectives inside group().
  static Expected<std::vector<std::unique_ptr<Communicator>>>
  createLocal(std::vector<std::shared_ptr<Backend>> backends,
              std::optional<std::chrono::milliseconds> timeout = {});
  ~Communicator();

  int rank() const { return nccl->rank(); }
  int size() const { return nccl->size(); }
  const DeviceId &device() const { return backend->device(); }
  /// Sequence number of the last collective (replays of graphs count).
  uint64_t sequence() const { return nccl->sequence(); }
  bool poisoned() const { return nccl->poisoned(); }
  /// Aborts the communicator: every later call is device_poisoned.
  void abort() { nccl->abort("aborted by its owner"); }

  /// Element-wise reduction over the ranks: a new tensor / into `x`.
  Expected<Tensor> allReduce(const Tensor &x, ReduceOp op);
  Expected<void> allReduceInPlace(const Tensor &x, ReduceOp op);
  /// The ranks' `x` (same shape on every rank) concatenated along dim 0
  /// (a rank-0 `x` gives a 1-D tensor of `size()` elements).
  Expected<Tensor> allGather(const Tensor &x);
  /// The reduction of `x`, split along dim 0: rank r gets part r (dim 0 a
  /// multiple of `size()`).
  Expected<Tensor> reduceScatter(const Tensor &x, ReduceOp op);
  /// `root`'s `x` on every rank (elsewhere `x` gives the dtype and shape).
  Expected<Tensor> broadcast(const Tensor &x, int root);
  /// Point to point, matched by the peer's recv / send (in one group() to
  /// send and receive at once).
  Expected<void> send(const Tensor &x, int peer);
  Expected<Tensor> recv(DType type, const std::vector<int64_t> &shape, int peer);

  /// Runs `calls` as one NCCL group (send/recv pairs; every rank of a
  /// createLocal communicator).
  static Expected<void> group(const std::function<Expected<void>()> &calls);

private:
  Communicator(std::shared_ptr<Backend> backend, std::shared_ptr<NcclCommunicator> nccl);
  /// `backend` usable and `tensor` its own (named `what`); the address to
  /// give NCCL.
  Expected<uint64_t> operand(const Tensor &tensor, const std::string &what);
  Expected<Tensor> output(const char *op, DType type, std::vector<int64_t> shape);
  Expected<void> checkRank(const char *op, const char *what, int rank) const;
  /// Tells NCCL whether the backend is capturing; during a capture, the
  /// list of ops its graph's replays issue (null otherwise).
  std::vector<std::string> *followCapture();

  std::shared_ptr<Backend> backend;
  std::shared_ptr<NcclCommunicator> nccl; // graphs watching replays hold it weakly
  const void *capture = nullptr;          // the backend's capture `captured` belongs to
  std::shared_ptr<std::vector<std::string>> captured;
};

} // namespace kiln

#endif
