//===- Nccl.cpp - collectives across GPUs through NCCL -------------------===//
#include "kiln/runtime/cuda/Nccl.h"
#include "kiln/runtime/cuda/CudaDevice.h"

#include "ArrivalBoard.h"
#include "nccl/NcclTypes.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

namespace kiln {

using namespace nccl;
using Clock = std::chrono::steady_clock;

namespace {
struct NcclLibrary {
#define KILN_NCCL_SYMBOL(member, symbol, result, parameters) result(*member) parameters = nullptr;
#include "nccl/NcclSymbols.def"
#undef KILN_NCCL_SYMBOL
  NcclStatus status;

  static const NcclLibrary &get() {
    static const NcclLibrary library = load();
    return library;
  }

private:
  static NcclLibrary load() {
    NcclLibrary n{};
    const char *named = std::getenv("KILN_NCCL_LIBRARY");
    n.status.library = named && *named ? named : "libnccl.so.2";
    void *lib = dlopen(n.status.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = dlerror();
      n.status.unavailable = n.status.library + " not found (KILN_NCCL_LIBRARY names it): " +
                             (why ? why : "");
      return n;
    }
    // Every symbol, or NCCL is unusable: the first one missing is named
    // (ncclCommInitRankConfig and ncclCommFinalize need NCCL 2.14+).
#define KILN_NCCL_SYMBOL(member, symbol, result, parameters)                   \
  n.member = reinterpret_cast<decltype(n.member)>(dlsym(lib, #symbol));        \
  if (!n.member) {                                                             \
    n.status.unavailable = n.status.library + " has no " #symbol " (kiln needs NCCL 2.14+)"; \
    return n;                                                                  \
  }
#include "nccl/NcclSymbols.def"
#undef KILN_NCCL_SYMBOL
    if (n.getVersion(&n.status.version) != ncclSuccess) {
      n.status.unavailable = n.status.library + ": ncclGetVersion failed";
      return n;
    }
    n.status.available = true;
    return n;
  }
};

const NcclLibrary &library() { return NcclLibrary::get(); }

Expected<const NcclLibrary *> usableLibrary(const char *what) {
  const NcclLibrary &n = library();
  if (!n.status.available)
    return makeError(ErrorKind::Unsupported,
                     std::string(what) + ": NCCL is not available: " + n.status.unavailable);
  return &n;
}

std::string describeResult(ncclResult_t r) {
  const char *text = library().getErrorString ? library().getErrorString(r) : nullptr;
  return "NCCL error " + std::to_string(r) + (text ? std::string(" (") + text + ")" : "");
}

/// Bad arguments are the caller's; anything else leaves NCCL's state unknown.
ErrorKind kindOf(ncclResult_t r) {
  return r == ncclInvalidArgument || r == ncclInvalidUsage ? ErrorKind::InvalidArgument
                                                           : ErrorKind::Launch;
}

/// Polls a non-blocking communicator until its last call is done or
/// `deadline` passes (then ncclInProgress).
ncclResult_t settleUntil(ncclComm_t comm, Clock::time_point deadline) {
  ncclResult_t state = ncclInProgress;
  for (int spins = 0;; ++spins) {
    if (library().commGetAsyncError(comm, &state) != ncclSuccess || state != ncclInProgress)
      return state;
    if (Clock::now() > deadline)
      return ncclInProgress;
    if (spins > 100)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string milliseconds(std::chrono::milliseconds limit) {
  return std::to_string(limit.count()) + " ms";
}

/// The calls issued inside NCCL groups of this thread, watched when the
/// outermost group ends.
struct GroupState {
  int depth = 0;
  std::vector<std::pair<NcclCommunicator *, std::string>> issued;
};
thread_local GroupState groupState;
} // namespace

struct NcclCommunicator::Pending {
  std::string what;
  uint64_t sequence;
  void *event;
  Clock::time_point start;
};

std::string NcclStatus::versionText() const {
  return std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
         std::to_string(version % 100);
}

const NcclStatus &ncclStatus() { return library().status; }

Expected<std::chrono::milliseconds> ncclTimeoutSetting() {
  const char *text = std::getenv("KILN_NCCL_TIMEOUT_MS");
  if (!text || !*text)
    return std::chrono::minutes(5);
  std::string_view value(text);
  int64_t ms = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), ms);
  if (error != std::errc() || end != value.data() + value.size() || ms <= 0)
    return makeError(ErrorKind::InvalidArgument,
                     "KILN_NCCL_TIMEOUT_MS=" + std::string(value) +
                         " is not a positive whole number of milliseconds");
  return std::chrono::milliseconds(ms);
}

Expected<NcclUniqueId> NcclUniqueId::create() {
  auto nccl = usableLibrary("nccl unique id");
  if (!nccl)
    return std::unexpected(nccl.error());
  ncclUniqueId raw;
  if (ncclResult_t r = (*nccl)->getUniqueId(&raw); r != ncclSuccess)
    return makeError(ErrorKind::Launch, "ncclGetUniqueId: " + describeResult(r));
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), raw.internal, kBytes);
  return id;
}

Expected<NcclUniqueId> NcclUniqueId::fromBytes(std::span<const uint8_t> bytes) {
  if (bytes.size() != kBytes)
    return makeError(ErrorKind::InvalidArgument,
                     "an NCCL unique id is " + std::to_string(kBytes) + " bytes, got " +
                         std::to_string(bytes.size()));
  NcclUniqueId id;
  std::memcpy(id.bytes.data(), bytes.data(), kBytes);
  return id;
}

Expected<NcclUniqueId> NcclUniqueId::fromHex(std::string_view hex) {
  if (hex.size() != 2 * kBytes)
    return makeError(ErrorKind::InvalidArgument,
                     "an NCCL unique id in hex is " + std::to_string(2 * kBytes) +
                         " characters, got " + std::to_string(hex.size()));
  NcclUniqueId id;
  for (size_t i = 0; i < kBytes; ++i) {
    auto [end, error] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, id.bytes[i], 16);
    if (error != std::errc() || end != hex.data() + 2 * i + 2)
      return makeError(ErrorKind::InvalidArgument,
                       "an NCCL unique id in hex has '" + std::string(hex.substr(2 * i, 2)) +
                           "' at character " + std::to_string(2 * i) +
                           " (hex digits only)");
  }
  return id;
}

std::string NcclUniqueId::toHex() const {
  static constexpr char digits[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : bytes) {
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

const char *reduceOpName(ReduceOp op) {
  constexpr const char *names[] = {"sum", "prod", "max", "min", "avg"};
  return names[static_cast<int>(op)];
}

std::optional<ReduceOp> reduceOpFromName(std::string_view name) {
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg})
    if (name == reduceOpName(op))
      return op;
  return std::nullopt;
}

Expected<int> ncclReductionType(DType type, ReduceOp op, int version) {
  auto unsupported = [&](const std::string &why) {
    return makeError(ErrorKind::Unsupported, std::string("a reduction (") + reduceOpName(op) +
                                                 ") of " + std::string(dtypeName(type)) + ": " +
                                                 why);
  };
  if (op == ReduceOp::Avg && !isFloatDType(type))
    return unsupported("avg is for float types (sum, then divide)");
  switch (type) {
  case DType::F64: return ncclFloat64;
  case DType::F32: return ncclFloat32;
  case DType::F16: return ncclFloat16;
  case DType::BF16:
    if (version < ncclVersionCode(2, 10, 0))
      return unsupported("bf16 needs NCCL 2.10+");
    return ncclBfloat16;
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    if (version < ncclVersionCode(2, 24, 0))
      return unsupported("f8 needs NCCL 2.24+");
    return type == DType::F8E4M3FN ? ncclFloat8e4m3 : ncclFloat8e5m2;
  case DType::I8: return ncclInt8;
  case DType::I32: return ncclInt32;
  case DType::I64: return ncclInt64;
  case DType::U8: return ncclUint8;
  case DType::U32: return ncclUint32;
  case DType::U64: return ncclUint64;
  case DType::I16:
  case DType::U16:
  case DType::Bool: break;
  }
  return unsupported("NCCL has no such type (it reduces f64 f32 f16 bf16 i8 i32 i64 ui8 ui32 "
                     "ui64, and f8 from 2.24)");
}

NcclCommunicator::NcclCommunicator(CudaDevice &device, void *comm, int rank, int size,
                                   std::chrono::milliseconds timeout,
                                   std::unique_ptr<ArrivalBoard> board)
    : cudaDevice(device), comm(comm), rankIndex(rank), rankCount(size), limit(timeout),
      board(std::move(board)), watchdog([this] { watchdogLoop(); }) {}

Expected<std::unique_ptr<NcclCommunicator>>
NcclCommunicator::create(CudaDevice &device, const NcclUniqueId &id, int rank, int size,
                         std::chrono::milliseconds timeout) {
  std::string where = "nccl init of rank " + std::to_string(rank) + " of " +
                      std::to_string(size) + " on " + device.properties().name;
  auto nccl = usableLibrary(where.c_str());
  if (!nccl)
    return std::unexpected(nccl.error());
  if (size < 1 || rank < 0 || rank >= size)
    return makeError(ErrorKind::InvalidArgument,
                     where + ": the rank must be in [0, size) and the size at least 1");
  auto board = ArrivalBoard::open(id.bytes, size);
  if (board)
    board->post(rank, 0);
  // NCCL takes the device from the thread's current context.
  if (auto stream = device.currentStream(); !stream)
    return std::unexpected(stream.error());
  ncclConfig_t config;
  config.blocking = 0;
  ncclUniqueId raw;
  std::memcpy(raw.internal, id.bytes.data(), NcclUniqueId::kBytes);
  ncclComm_t comm = nullptr;
  auto deadline = Clock::now() + timeout;
  ncclResult_t r = (*nccl)->commInitRankConfig(&comm, size, raw, rank, &config);
  if (r == ncclInProgress || (r == ncclSuccess && comm))
    r = settleUntil(comm, deadline);
  if (r != ncclSuccess) {
    if (comm)
      (*nccl)->commAbort(comm);
    if (r == ncclInProgress)
      return makeError(ErrorKind::Launch,
                       where + " did not complete within " + milliseconds(timeout) + ": " +
                           (board ? board->missing(0, false) : "missing ranks unknown") +
                           "; the communicator is aborted");
    return makeError(kindOf(r), where + ": " + describeResult(r));
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(device, comm, rank, size, timeout, std::move(board)));
}

Expected<std::vector<std::unique_ptr<NcclCommunicator>>>
NcclCommunicator::createLocal(std::span<CudaDevice *const> devices,
                              std::chrono::milliseconds timeout) {
  int size = static_cast<int>(devices.size());
  std::string where = "nccl init of " + std::to_string(size) + " local rank(s)";
  auto nccl = usableLibrary(where.c_str());
  if (!nccl)
    return std::unexpected(nccl.error());
  if (size < 1)
    return makeError(ErrorKind::InvalidArgument, where + ": no devices given");
  auto id = NcclUniqueId::create();
  if (!id)
    return std::unexpected(id.error());
  ncclUniqueId raw;
  std::memcpy(raw.internal, id->bytes.data(), NcclUniqueId::kBytes);
  std::vector<ncclComm_t> comms(size, nullptr);
  auto deadline = Clock::now() + timeout;
  // One group: each rank's init would otherwise wait for the next.
  ncclResult_t r = (*nccl)->groupStart();
  std::optional<Error> deviceError;
  for (int i = 0; i < size && r == ncclSuccess; ++i) {
    if (auto stream = devices[i]->currentStream(); !stream) {
      deviceError = stream.error();
      r = ncclUnhandledCudaError;
      break;
    }
    ncclConfig_t config;
    config.blocking = 0;
    r = (*nccl)->commInitRankConfig(&comms[i], size, raw, i, &config);
    if (r == ncclInProgress)
      r = ncclSuccess;
  }
  ncclResult_t end = (*nccl)->groupEnd();
  if (r == ncclSuccess && end != ncclInProgress)
    r = end;
  for (int i = 0; i < size && r == ncclSuccess; ++i)
    r = comms[i] ? settleUntil(comms[i], deadline) : ncclInternalError;
  if (r != ncclSuccess) {
    for (ncclComm_t comm : comms)
      if (comm)
        (*nccl)->commAbort(comm);
    if (deviceError)
      return std::unexpected(*deviceError);
    if (r == ncclInProgress)
      return makeError(ErrorKind::Launch, where + " did not complete within " +
                                              milliseconds(timeout) +
                                              "; the communicators are aborted");
    return makeError(kindOf(r), where + ": " + describeResult(r));
  }
  std::vector<std::unique_ptr<NcclCommunicator>> result;
  for (int i = 0; i < size; ++i) {
    auto board = ArrivalBoard::open(id->bytes, size);
    if (board)
      board->post(i, 0);
    result.push_back(std::unique_ptr<NcclCommunicator>(
        new NcclCommunicator(*devices[i], comms[i], i, size, timeout, std::move(board))));
  }
  return result;
}

NcclCommunicator::~NcclCommunicator() {
  const NcclLibrary &nccl = library();
  {
    std::lock_guard lock(mutex);
    if (!aborted) {
      // Finalize flushes what is queued; past the timeout it is aborted.
      ncclResult_t r = nccl.commFinalize(comm);
      if (r == ncclInProgress || r == ncclSuccess)
        r = settleUntil(comm, Clock::now() + limit);
      if (r == ncclSuccess)
        nccl.commDestroy(comm);
      else
        nccl.commAbort(comm);
      aborted = true;
    }
    stopping = true;
  }
  wake.notify_all();
  watchdog.join();
  for (auto &p : pending)
    cudaDevice.destroyEvent(p->event);
}

bool NcclCommunicator::poisoned() const {
  std::lock_guard lock(mutex);
  return !poison.empty();
}

Expected<void> NcclCommunicator::checkUsable() const {
  if (!poison.empty())
    return makeError(ErrorKind::DevicePoisoned,
                     "the NCCL communicator (rank " + std::to_string(rankIndex) + " of " +
                         std::to_string(rankCount) + ") is poisoned: " + poison +
                         "; create a new one");
  return {};
}

void NcclCommunicator::fail(const std::string &message) {
  if (!poison.empty())
    return;
  poison = message;
  cudaDevice.poison("an aborted NCCL collective (" + message + ")");
  if (!aborted)
    library().commAbort(comm);
  aborted = true;
  for (auto &p : pending)
    cudaDevice.destroyEvent(p->event);
  pending.clear();
}

void NcclCommunicator::abort(const std::string &why) {
  std::lock_guard lock(mutex);
  fail(why.empty() ? "aborted by its owner" : why);
}

std::string NcclCommunicator::missingRanks(uint64_t sequence) const {
  return board ? board->missing(sequence, true)
               : "missing ranks unknown (no shared-memory arrival board)";
}

Expected<void> NcclCommunicator::settle(const std::string &what, Clock::time_point deadline) {
  ncclResult_t r = settleUntil(comm, deadline);
  if (r == ncclSuccess)
    return {};
  std::string message =
      r == ncclInProgress
          ? what + " could not be queued within " + milliseconds(limit) + ": " +
                missingRanks(lastSequence)
          : what + ": " + describeResult(r);
  fail(message);
  return checkUsable();
}

Expected<void> NcclCommunicator::watch(std::string what, uint64_t sequence) {
  auto event = cudaDevice.recordEvent();
  if (!event)
    return std::unexpected(event.error());
  bool idle = pending.empty();
  pending.push_back(std::make_unique<Pending>(Pending{std::move(what), sequence, *event,
                                                      Clock::now()}));
  // A busy watchdog polls every millisecond anyway: waking it per call
  // would only contend for the lock at high call rates.
  if (idle)
    wake.notify_all();
  return {};
}

void NcclCommunicator::watchdogLoop() {
  std::unique_lock lock(mutex);
  while (!stopping) {
    if (pending.empty()) {
      wake.wait(lock);
      continue;
    }
    Pending &p = *pending.front();
    auto done = cudaDevice.eventDone(p.event);
    if (!done) {
      fail(p.what + ": " + done.error().message);
      continue;
    }
    if (*done) {
      cudaDevice.destroyEvent(p.event);
      pending.pop_front();
      continue;
    }
    ncclResult_t state = ncclSuccess;
    library().commGetAsyncError(comm, &state);
    std::string where = " (rank " + std::to_string(rankIndex) + " of " +
                        std::to_string(rankCount) + ")";
    if (state != ncclSuccess && state != ncclInProgress)
      fail(p.what + where + ": " + describeResult(state));
    else if (Clock::now() - p.start > limit)
      fail(p.what + where + " did not complete within " + milliseconds(limit) + ": " +
           missingRanks(p.sequence) + "; the communicator is aborted");
    else
      wake.wait_for(lock, std::chrono::milliseconds(1));
  }
}

Expected<void> NcclCommunicator::issue(const char *op,
                                       const std::function<int(void *stream)> &call) {
  std::lock_guard lock(mutex);
  if (auto ok = checkUsable(); !ok)
    return ok;
  auto stream = cudaDevice.currentStream();
  if (!stream)
    return std::unexpected(stream.error());
  // A captured op gets its sequence number when a replay issues it.
  uint64_t sequence = capturing ? lastSequence : ++lastSequence;
  std::string what = std::string(op) + (capturing ? " (captured)" : " #" + std::to_string(sequence));
  if (!capturing && board)
    board->post(rankIndex, sequence);
  auto deadline = Clock::now() + limit;
  auto r = static_cast<ncclResult_t>(call(*stream));
  if (r == ncclInProgress) {
    if (auto ok = settle(what, deadline); !ok)
      return ok;
  } else if (r != ncclSuccess) {
    if (kindOf(r) == ErrorKind::InvalidArgument)
      return makeError(ErrorKind::InvalidArgument, what + ": " + describeResult(r));
    fail(what + ": " + describeResult(r));
    return checkUsable();
  }
  if (capturing)
    return {};
  if (groupState.depth > 0) {
    groupState.issued.emplace_back(this, what);
    return {};
  }
  return watch(std::move(what), sequence);
}

Expected<void> NcclCommunicator::group(const std::function<Expected<void>()> &calls) {
  auto nccl = usableLibrary("nccl group");
  if (!nccl)
    return std::unexpected(nccl.error());
  if (ncclResult_t r = (*nccl)->groupStart(); r != ncclSuccess)
    return makeError(kindOf(r), "ncclGroupStart: " + describeResult(r));
  ++groupState.depth;
  Expected<void> ok = calls();
  --groupState.depth;
  ncclResult_t end = (*nccl)->groupEnd();
  if (groupState.depth > 0)
    return ok; // the outermost group watches
  auto issued = std::move(groupState.issued);
  groupState.issued.clear();
  // Each communicator of the group: settled, then its ops watched together.
  for (size_t i = 0; i < issued.size(); ++i) {
    NcclCommunicator *c = issued[i].first;
    std::string what;
    size_t j = i;
    for (; j < issued.size() && issued[j].first == c; ++j)
      what += (what.empty() ? "" : ", ") + issued[j].second;
    i = j - 1;
    std::lock_guard lock(c->mutex);
    if (!c->poison.empty())
      continue;
    what = "group (" + what + ")";
    Expected<void> done = end == ncclSuccess || end == ncclInProgress
                              ? c->settle(what, Clock::now() + c->limit)
                              : makeError(kindOf(end), what + ": " + describeResult(end));
    if (done)
      done = c->watch(what, c->lastSequence);
    if (ok && !done)
      ok = done;
  }
  if (ok && end != ncclSuccess && end != ncclInProgress)
    return makeError(kindOf(end), "ncclGroupEnd: " + describeResult(end));
  return ok;
}

void NcclCommunicator::setCapturing(bool on) {
  std::lock_guard lock(mutex);
  capturing = on;
}

Expected<void> NcclCommunicator::replayed(const std::vector<std::string> &ops) {
  if (ops.empty())
    return {};
  std::lock_guard lock(mutex);
  if (auto ok = checkUsable(); !ok)
    return ok;
  uint64_t first = lastSequence + 1;
  lastSequence += ops.size();
  if (board)
    board->post(rankIndex, lastSequence);
  std::string what = "graph replay of";
  for (size_t i = 0; i < ops.size(); ++i)
    what += (i ? ", " : " ") + ops[i] + " #" + std::to_string(first + i);
  return watch(std::move(what), lastSequence);
}

Expected<void> NcclCommunicator::allReduce(uint64_t send, uint64_t recv, size_t count,
                                           DType type, ReduceOp op) {
  auto nccl = ncclReductionType(type, op, library().status.version);
  if (!nccl)
    return std::unexpected(nccl.error());
  return issue("all_reduce", [&](void *stream) {
    return library().allReduce(reinterpret_cast<const void *>(send),
                               reinterpret_cast<void *>(recv), count,
                               static_cast<ncclDataType_t>(*nccl),
                               static_cast<ncclRedOp_t>(op), comm, stream);
  });
}

Expected<void> NcclCommunicator::reduceScatter(uint64_t send, uint64_t recv, size_t recvCount,
                                               DType type, ReduceOp op) {
  auto nccl = ncclReductionType(type, op, library().status.version);
  if (!nccl)
    return std::unexpected(nccl.error());
  return issue("reduce_scatter", [&](void *stream) {
    return library().reduceScatter(reinterpret_cast<const void *>(send),
                                   reinterpret_cast<void *>(recv), recvCount,
                                   static_cast<ncclDataType_t>(*nccl),
                                   static_cast<ncclRedOp_t>(op), comm, stream);
  });
}

// Collectives that only move data move bytes: every dtype, NCCL's or not.
Expected<void> NcclCommunicator::allGather(uint64_t send, uint64_t recv, size_t sendCount,
                                           DType type) {
  return issue("all_gather", [&](void *stream) {
    return library().allGather(reinterpret_cast<const void *>(send),
                               reinterpret_cast<void *>(recv), sendCount * dtypeSize(type),
                               ncclUint8, comm, stream);
  });
}

Expected<void> NcclCommunicator::broadcast(uint64_t send, uint64_t recv, size_t count,
                                           DType type, int root) {
  return issue("broadcast", [&](void *stream) {
    return library().broadcast(reinterpret_cast<const void *>(send),
                               reinterpret_cast<void *>(recv), count * dtypeSize(type),
                               ncclUint8, root, comm, stream);
  });
}

Expected<void> NcclCommunicator::send(uint64_t data, size_t count, DType type, int peer) {
  return issue("send", [&](void *stream) {
    return library().send(reinterpret_cast<const void *>(data), count * dtypeSize(type),
                          ncclUint8, peer, comm, stream);
  });
}

Expected<void> NcclCommunicator::recv(uint64_t data, size_t count, DType type, int peer) {
  return issue("recv", [&](void *stream) {
    return library().recv(reinterpret_cast<void *>(data), count * dtypeSize(type), ncclUint8,
                          peer, comm, stream);
  });
}

} // namespace kiln
