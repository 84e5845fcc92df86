//===- Nccl.h - collectives across GPUs through NCCL ------------*- C++ -*-===//
//
// libnccl.so.2 is loaded with dlopen at first use (KILN_NCCL_LIBRARY names
// it, else the loader finds it), never linked: without it kiln still loads
// and runs, with no communicators and a reason. Communicators are NCCL's
// non-blocking ones, so that no call can hang: every wait (init, enqueue,
// completion on the device's stream, finalize) is bounded by the
// communicator's timeout (KILN_NCCL_TIMEOUT_MS, default 5 minutes). A
// collective that does not complete in time is aborted by the
// communicator's watchdog, which poisons the communicator and its device
// and names the op, its sequence number and the ranks that did not arrive
// (from an arrival board in shared memory, ArrivalBoard.h).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_NCCL_H
#define KILN_RUNTIME_CUDA_NCCL_H

#include "kiln/runtime/common/DType.h"
#include "kiln/runtime/common/Error.h"

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace kiln {

class CudaDevice;
class ArrivalBoard;

/// What kiln found of NCCL.
struct NcclStatus {
  bool available = false;
  int version = 0;        // NCCL_VERSION_CODE, 22703 for 2.27.3
  std::string library;    // what was opened
  std::string unavailable; // why not available, in words
  /// "2.27.3".
  std::string versionText() const;
};
const NcclStatus &ncclStatus();

/// The communicator timeout: KILN_NCCL_TIMEOUT_MS (a positive integer), or
/// 5 minutes; a malformed value is an invalid_argument error naming it.
Expected<std::chrono::milliseconds> ncclTimeoutSetting();

/// A communicator's identity: 128 bytes that one rank makes and every rank
/// passes to its init (hex, 256 characters, to travel as text).
struct NcclUniqueId {
  static constexpr size_t kBytes = 128;
  std::array<uint8_t, kBytes> bytes{};
  /// A fresh one from NCCL (ncclGetUniqueId: it also starts the bootstrap
  /// listener rank 0's init uses, so rank 0's process should make it).
  static Expected<NcclUniqueId> create();
  static Expected<NcclUniqueId> fromBytes(std::span<const uint8_t> bytes);
  static Expected<NcclUniqueId> fromHex(std::string_view hex);
  std::string toHex() const;
};

enum class ReduceOp { Sum, Prod, Max, Min, Avg };
const char *reduceOpName(ReduceOp op);
std::optional<ReduceOp> reduceOpFromName(std::string_view name);

/// NCCL's element type for `type` in a reduction under NCCL `version`
/// (ncclDataType_t's value); unsupported, naming the dtype and the op, for
/// types NCCL cannot reduce (i16, ui16, i1) and for avg of an integer type.
/// Collectives that only move data take every dtype (as bytes).
Expected<int> ncclReductionType(DType type, ReduceOp op, int version);

/// One rank of an NCCL communicator, on one kiln CUDA device.
class NcclCommunicator {
public:
  /// Rank `rank` of `size` from `id` (one process per GPU): waits, at most
  /// `timeout`, for every rank to join; a rank that does not is named.
  static Expected<std::unique_ptr<NcclCommunicator>>
  create(CudaDevice &device, const NcclUniqueId &id, int rank, int size,
         std::chrono::milliseconds timeout);
  /// One communicator over `devices`, ranks in their order, driven by this
  /// process (ncclCommInitAll's use).
  static Expected<std::vector<std::unique_ptr<NcclCommunicator>>>
  createLocal(std::span<CudaDevice *const> devices, std::chrono::milliseconds timeout);
  /// Finalizes and destroys (bounded by the timeout; aborts past it, or
  /// at once when poisoned).
  ~NcclCommunicator();

  int rank() const { return rankIndex; }
  int size() const { return rankCount; }
  CudaDevice &device() const { return cudaDevice; }
  /// Collectives issued so far (the sequence number of the last one).
  uint64_t sequence() const { return lastSequence; }
  bool poisoned() const;
  /// Aborts NCCL's side of the communicator (in-flight collectives end
  /// with garbage); every later call is device_poisoned.
  void abort(const std::string &why);

  // Collectives on device addresses of `device()`, queued on its stream.
  // Counts are elements of `type`; sizes and ranks are checked by the caller
  // (the backend's Communicator), NCCL checks them again.
  Expected<void> allReduce(uint64_t send, uint64_t recv, size_t count, DType type, ReduceOp op);
  Expected<void> allGather(uint64_t send, uint64_t recv, size_t sendCount, DType type);
  Expected<void> reduceScatter(uint64_t send, uint64_t recv, size_t recvCount, DType type,
                               ReduceOp op);
  Expected<void> broadcast(uint64_t send, uint64_t recv, size_t count, DType type, int root);
  Expected<void> send(uint64_t data, size_t count, DType type, int peer);
  Expected<void> recv(uint64_t data, size_t count, DType type, int peer);

  /// Runs `calls` as one NCCL group: send/recv pairs, and one process
  /// driving several GPUs; they complete (or time out) together.
  static Expected<void> group(const std::function<Expected<void>()> &calls);

  /// While the device's stream is captured into a graph, collectives are
  /// recorded by the capture, not numbered or watched; replayed() numbers
  /// and watches one replay of the captured `ops`.
  void setCapturing(bool on);
  Expected<void> replayed(const std::vector<std::string> &ops);

private:
  struct Pending; // a queued collective the watchdog waits for
  NcclCommunicator(CudaDevice &device, void *comm, int rank, int size,
                   std::chrono::milliseconds timeout, std::unique_ptr<ArrivalBoard> board);
  /// Issues one NCCL call (under the communicator's lock), numbered and
  /// posted on the arrival board first; watched unless in a group or a
  /// capture.
  Expected<void> issue(const char *op, const std::function<int(void *stream)> &call);
  /// Waits for NCCL's non-blocking side to finish the last call.
  Expected<void> settle(const std::string &what,
                        std::chrono::steady_clock::time_point deadline);
  /// Watches completion of the work queued so far: `what` names it.
  Expected<void> watch(std::string what, uint64_t sequence);
  std::string missingRanks(uint64_t sequence) const;
  Expected<void> checkUsable() const;
  void watchdogLoop();
  /// Poisons and aborts after a failure (`message` says what).
  void fail(const std::string &message);

  CudaDevice &cudaDevice;
  void *comm;
  int rankIndex, rankCount;
  std::chrono::milliseconds limit;
  std::unique_ptr<ArrivalBoard> board;
  uint64_t lastSequence = 0;
  bool capturing = false;

  mutable std::mutex mutex; // comm, pending, poison: shared with the watchdog
  std::condition_variable wake;
  std::deque<std::unique_ptr<Pending>> pending;
  std::string poison; // non-empty: poisoned, and why
  bool aborted = false, stopping = false;
  std::thread watchdog;
};

} // namespace kiln

#endif
