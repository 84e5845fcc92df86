//===- CApi.cpp - kiln.h over the C++ Backend ----------------------------===//
#include "kiln/kiln.h"
#include "kiln/runtime/common/CopyBytes.h"

#include "kiln/backend/Backend.h"
#include "kiln/backend/Distributed.h"

#include <algorithm>
#include <cstring>

struct kiln_backend {
  std::unique_ptr<kiln::Backend> backend;
};
struct kiln_tensor {
  kiln::Tensor tensor;
};
struct kiln_graph {
  kiln::Graph graph;
};
struct kiln_communicator {
  std::unique_ptr<kiln::Communicator> communicator;
};

namespace {
using namespace kiln;

thread_local std::string lastMessage;

kiln_status status(kiln_status_code code, std::string message) {
  lastMessage = std::move(message);
  return {code, lastMessage.c_str()};
}

kiln_status fromError(const Error &e) {
  kiln_status_code code = KILN_INTERNAL;
  switch (e.kind) {
  case ErrorKind::InvalidArgument: code = KILN_INVALID_ARGUMENT; break;
  case ErrorKind::Compile: code = KILN_COMPILE; break;
  case ErrorKind::Launch: code = KILN_LAUNCH; break;
  case ErrorKind::OutOfMemory: code = KILN_OUT_OF_MEMORY; break;
  case ErrorKind::Unsupported: code = KILN_UNSUPPORTED; break;
  case ErrorKind::DevicePoisoned: code = KILN_DEVICE_POISONED; break;
  }
  return status(code, e.message);
}

kiln_status ok() { return status(KILN_OK, ""); }

kiln_status invalid(const char *function, const char *what) {
  return status(KILN_INVALID_ARGUMENT, std::string(function) + ": " + what);
}

/// Runs `body`; whatever it throws becomes a status instead of crossing C.
template <typename Body> kiln_status guarded(const char *function, Body &&body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return status(KILN_OUT_OF_MEMORY, std::string(function) + ": out of host memory");
  } catch (const std::exception &e) {
    return status(KILN_INTERNAL, std::string(function) + ": " + e.what());
  } catch (...) {
    return status(KILN_INTERNAL, std::string(function) + ": unknown exception");
  }
}

template <typename T> kiln_status check(const Expected<T> &result) {
  return result ? ok() : fromError(result.error());
}

bool validDtype(kiln_dtype d) { return d >= KILN_F64 && d <= KILN_F8E5M2; }
static_assert(static_cast<int>(DType::F64) == KILN_F64 &&
                  static_cast<int>(DType::BF16) == KILN_BF16 &&
                  static_cast<int>(DType::U64) == KILN_U64 &&
                  static_cast<int>(DType::Bool) == KILN_BOOL &&
                  static_cast<int>(DType::F8E5M2) == KILN_F8E5M2,
              "kiln_dtype follows DType's order");
DType toDType(kiln_dtype d) { return static_cast<DType>(d); }

ElementType toElementType(kiln_dtype d) {
  constexpr ElementType map[] = {
      ElementType::F64, ElementType::F32, ElementType::F16, ElementType::BF16,
      ElementType::I8,  ElementType::I16, ElementType::I32, ElementType::I64,
      ElementType::U8,  ElementType::U16, ElementType::U32, ElementType::U64,
      ElementType::Bool, ElementType::F8E4M3, ElementType::F8E5M2};
  return map[d];
}

/// A C backend as the shared one a communicator holds: it does not own it
/// (kiln.h: the backend outlives its communicators).
std::shared_ptr<Backend> borrowed(kiln_backend *backend) {
  return std::shared_ptr<Backend>(backend->backend.get(), [](Backend *) {});
}

std::optional<std::chrono::milliseconds> timeoutOf(int64_t ms) {
  if (ms == 0)
    return std::nullopt;
  return std::chrono::milliseconds(ms);
}

bool validReduceOp(kiln_reduce_op op) { return op >= KILN_REDUCE_SUM && op <= KILN_REDUCE_AVG; }
static_assert(static_cast<int>(ReduceOp::Avg) == KILN_REDUCE_AVG, "kiln_reduce_op follows ReduceOp");

kiln_status setResult(Expected<Tensor> tensor, kiln_tensor **result) {
  if (!tensor)
    return fromError(tensor.error());
  *result = new kiln_tensor{std::move(*tensor)};
  return ok();
}

std::vector<Tensor> tensorsOf(kiln_tensor *const *inputs, size_t count) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < count; ++i)
    tensors.push_back(inputs[i] ? inputs[i]->tensor : Tensor());
  return tensors;
}
} // namespace

extern "C" {

kiln_status kiln_device_count(const char *kind, int *count) {
  return guarded(__func__, [&] {
    if (!kind || !count)
      return invalid(__func__, "kind and count must not be NULL");
    auto id = DeviceId::parse(kind);
    if (!id)
      return fromError(id.error());
    *count = Backend::deviceCount(id->type);
    return ok();
  });
}

kiln_status kiln_backend_create(const char *device, kiln_backend **backend) {
  return guarded(__func__, [&] {
    if (!device || !backend)
      return invalid(__func__, "device and backend must not be NULL");
    auto id = DeviceId::parse(device);
    if (!id)
      return fromError(id.error());
    auto created = Backend::create(*id);
    if (!created)
      return fromError(created.error());
    *backend = new kiln_backend{std::move(*created)};
    return ok();
  });
}

void kiln_backend_destroy(kiln_backend *backend) { delete backend; }

kiln_status kiln_backend_name(kiln_backend *backend, char *name, size_t size) {
  return guarded(__func__, [&] {
    if (!backend || !name || size == 0)
      return invalid(__func__, "backend and name must not be NULL, size not 0");
    std::string text = backend->backend->name();
    size_t n = std::min(text.size(), size - 1);
    std::memcpy(name, text.data(), n);
    name[n] = '\0';
    return ok();
  });
}

kiln_status kiln_seed(kiln_backend *backend, uint64_t seed) {
  return guarded(__func__, [&] {
    if (!backend)
      return invalid(__func__, "backend must not be NULL");
    backend->backend->seed(seed);
    return ok();
  });
}

kiln_status kiln_sync(kiln_backend *backend) {
  return guarded(__func__, [&] {
    return backend ? check(backend->backend->sync()) : invalid(__func__, "NULL backend");
  });
}

kiln_status kiln_flush(kiln_backend *backend) {
  return guarded(__func__, [&] {
    return backend ? check(backend->backend->flush()) : invalid(__func__, "NULL backend");
  });
}

kiln_status kiln_tensor_from_host(kiln_backend *backend, kiln_dtype dtype,
                                  const int64_t *shape, size_t rank, const void *data,
                                  size_t bytes, kiln_tensor **tensor) {
  return guarded(__func__, [&] {
    if (!backend || !tensor || (rank && !shape) || !validDtype(dtype))
      return invalid(__func__, "NULL backend, tensor or shape, or an unknown dtype");
    std::vector<int64_t> dims(shape, shape + rank);
    auto needed = tensorBytes(toDType(dtype), dims);
    if (!needed)
      return invalid(__func__, needed.error().message.c_str());
    if (bytes != *needed || (bytes && !data))
      return status(KILN_INVALID_ARGUMENT,
                    std::string(__func__) + ": the tensor needs " + std::to_string(*needed) +
                        " bytes, got " + std::to_string(bytes) + (data ? "" : " and no data"));
    HostTensor host(toDType(dtype), std::move(dims));
    copyBytes(host.data.data(), data, bytes);
    auto uploaded = backend->backend->upload(host);
    if (!uploaded)
      return fromError(uploaded.error());
    *tensor = new kiln_tensor{std::move(*uploaded)};
    return ok();
  });
}

kiln_status kiln_random_key(kiln_backend *backend, kiln_tensor **key) {
  return guarded(__func__, [&] {
    if (!backend || !key)
      return invalid(__func__, "NULL backend or key");
    auto drawn = backend->backend->randomKey();
    if (!drawn)
      return fromError(drawn.error());
    *key = new kiln_tensor{std::move(*drawn)};
    return ok();
  });
}

kiln_status kiln_tensor_to_host(kiln_backend *backend, const kiln_tensor *tensor, void *data,
                                size_t bytes) {
  return guarded(__func__, [&] {
    if (!backend || !tensor || (bytes && !data))
      return invalid(__func__, "NULL backend, tensor or data");
    if (bytes != tensor->tensor.bytes())
      return status(KILN_INVALID_ARGUMENT, std::string(__func__) + ": the tensor holds " +
                                               std::to_string(tensor->tensor.bytes()) +
                                               " bytes, the buffer " + std::to_string(bytes));
    auto host = backend->backend->download(tensor->tensor);
    if (!host)
      return fromError(host.error());
    copyBytes(data, host->data.data(), bytes);
    return ok();
  });
}

kiln_status kiln_tensor_write(kiln_backend *backend, kiln_tensor *tensor, const void *data,
                              size_t bytes) {
  return guarded(__func__, [&] {
    if (!backend || !tensor || (bytes && !data))
      return invalid(__func__, "NULL backend, tensor or data");
    const Tensor &t = tensor->tensor;
    if (bytes != t.bytes())
      return status(KILN_INVALID_ARGUMENT, std::string(__func__) + ": the tensor holds " +
                                               std::to_string(t.bytes()) + " bytes, the data " +
                                               std::to_string(bytes));
    HostTensor host(t.dtype(), t.shape());
    copyBytes(host.data.data(), data, bytes);
    return check(backend->backend->write(t, host));
  });
}

kiln_status kiln_tensor_info(const kiln_tensor *tensor, kiln_dtype *dtype, size_t *rank,
                             int64_t *shape, size_t max_rank) {
  return guarded(__func__, [&] {
    if (!tensor)
      return invalid(__func__, "NULL tensor");
    const Tensor &t = tensor->tensor;
    if (dtype)
      *dtype = static_cast<kiln_dtype>(t.dtype());
    if (rank)
      *rank = t.shape().size();
    if (shape)
      std::copy_n(t.shape().begin(), std::min(max_rank, t.shape().size()), shape);
    return ok();
  });
}

void kiln_tensor_destroy(kiln_tensor *tensor) { delete tensor; }

kiln_status kiln_run(kiln_backend *backend, const char *program, kiln_tensor *const *inputs,
                     size_t input_count, kiln_tensor **outputs, size_t max_outputs,
                     size_t *output_count) {
  return guarded(__func__, [&] {
    if (!backend || !program || (input_count && !inputs) || (max_outputs && !outputs))
      return invalid(__func__, "NULL backend, program, inputs or outputs");
    auto results = backend->backend->run(program, tensorsOf(inputs, input_count));
    if (!results)
      return fromError(results.error());
    if (output_count)
      *output_count = results->size();
    if (results->size() > max_outputs)
      return status(KILN_INVALID_ARGUMENT,
                    std::string(__func__) + ": the program has " +
                        std::to_string(results->size()) + " results, room for " +
                        std::to_string(max_outputs));
    for (size_t i = 0; i < results->size(); ++i)
      outputs[i] = new kiln_tensor{std::move((*results)[i])};
    return ok();
  });
}

kiln_status kiln_apply(kiln_backend *backend, const char *op, kiln_tensor *const *inputs,
                       size_t input_count, kiln_dtype result_dtype, const int64_t *result_shape,
                       size_t result_rank, const char *attrs, kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!backend || !op || !result || (input_count && !inputs) ||
        (result_rank && !result_shape) || !validDtype(result_dtype))
      return invalid(__func__, "NULL argument or unknown dtype");
    auto applied = backend->backend->apply(
        op, tensorsOf(inputs, input_count), toDType(result_dtype),
        std::vector<int64_t>(result_shape, result_shape + result_rank), attrs ? attrs : "");
    if (!applied)
      return fromError(applied.error());
    *result = new kiln_tensor{std::move(*applied)};
    return ok();
  });
}

kiln_status kiln_auto_dynamic(kiln_backend *backend, int enabled) {
  return guarded(__func__, [&] {
    if (!backend)
      return invalid(__func__, "NULL backend");
    backend->backend->setAutoDynamic(enabled != 0);
    return ok();
  });
}

kiln_status kiln_profile_start(kiln_backend *backend, kiln_profile_token *token) {
  return guarded(__func__, [&] {
    if (!backend || !token)
      return invalid(__func__, "NULL backend or token");
    auto started = backend->backend->profileStart();
    if (!started)
      return fromError(started.error());
    *token = {started->id, started->stream};
    return ok();
  });
}

kiln_status kiln_profile_end(kiln_backend *backend, kiln_profile_token token,
                             double *milliseconds, int *measured) {
  return guarded(__func__, [&] {
    if (!backend || !milliseconds || !measured)
      return invalid(__func__, "NULL backend, milliseconds or measured");
    auto window = backend->backend->profileEnd({token.id, token.stream});
    if (!window)
      return fromError(window.error());
    *measured = window->milliseconds.has_value();
    if (*measured)
      *milliseconds = *window->milliseconds;
    return ok();
  });
}

kiln_status kiln_profile_abandon(kiln_backend *backend, kiln_profile_token token) {
  return guarded(__func__, [&] {
    if (!backend)
      return invalid(__func__, "NULL backend");
    backend->backend->profileAbandon({token.id, token.stream});
    return ok();
  });
}

kiln_status kiln_graph_prepare(kiln_backend *backend) {
  return guarded(__func__, [&] {
    return backend ? check(backend->backend->graphPrepare()) : invalid(__func__, "NULL backend");
  });
}

kiln_status kiln_graph_start_capture(kiln_backend *backend) {
  return guarded(__func__, [&] {
    return backend ? check(backend->backend->graphStartCapture())
                   : invalid(__func__, "NULL backend");
  });
}

kiln_status kiln_graph_stop_capture(kiln_backend *backend, kiln_graph **graph) {
  return guarded(__func__, [&] {
    if (!backend || !graph)
      return invalid(__func__, "NULL backend or graph");
    auto stopped = backend->backend->graphStopCapture();
    if (!stopped)
      return fromError(stopped.error());
    *graph = new kiln_graph{std::move(*stopped)};
    return ok();
  });
}

kiln_status kiln_graph_replay(kiln_backend *backend, const kiln_graph *graph) {
  return guarded(__func__, [&] {
    if (!backend || !graph)
      return invalid(__func__, "NULL backend or graph");
    return check(backend->backend->graphReplay(graph->graph));
  });
}

void kiln_graph_destroy(kiln_graph *graph) { delete graph; }

kiln_status kiln_memory_usage_get(kiln_backend *backend, kiln_memory_usage *usage) {
  return guarded(__func__, [&] {
    if (!backend || !usage)
      return invalid(__func__, "NULL backend or usage");
    MemoryUsage u = backend->backend->memoryPoolUsage();
    *usage = {u.numberAllocs, u.bytesInUse, u.bytesPadding, u.bytesReserved};
    return ok();
  });
}

kiln_status kiln_memory_pool_report(kiln_backend *backend, kiln_pool_report *reports,
                                    size_t max_reports, size_t *count) {
  return guarded(__func__, [&] {
    if (!backend || !count || (max_reports && !reports))
      return invalid(__func__, "NULL backend, reports or count");
    auto all = backend->backend->memoryPoolReport();
    *count = all.size();
    for (size_t i = 0; i < std::min(max_reports, all.size()); ++i) {
      kiln_pool_report &r = reports[i];
      std::memset(r.name, 0, sizeof r.name);
      std::memcpy(r.name, all[i].name.data(), std::min(all[i].name.size(), sizeof r.name - 1));
      r.page_size = all[i].pageSize;
      r.pages = all[i].pages;
      r.pages_peak = all[i].pagesPeak;
      r.largest_alloc = all[i].largestAlloc;
    }
    return ok();
  });
}

kiln_status kiln_memory_cleanup(kiln_backend *backend) {
  return guarded(__func__, [&] {
    if (!backend)
      return invalid(__func__, "NULL backend");
    backend->backend->memoryCleanup();
    return ok();
  });
}

kiln_status kiln_memory_persistent_allocations(kiln_backend *backend, int persistent) {
  return guarded(__func__, [&] {
    if (!backend)
      return invalid(__func__, "NULL backend");
    backend->backend->memoryPersistentAllocations(persistent != 0);
    return ok();
  });
}

kiln_status kiln_supports_dtype(kiln_backend *backend, kiln_dtype dtype, int *supported) {
  return guarded(__func__, [&] {
    if (!backend || !supported || !validDtype(dtype))
      return invalid(__func__, "NULL backend or supported, or an unknown dtype");
    *supported = backend->backend->supportsDtype(DataType{toElementType(dtype)});
    return ok();
  });
}

kiln_status kiln_dtype_usage(kiln_backend *backend, kiln_dtype dtype, unsigned *usage) {
  return guarded(__func__, [&] {
    if (!backend || !usage || !validDtype(dtype))
      return invalid(__func__, "NULL backend or usage, or an unknown dtype");
    DTypeUsageSet set = backend->backend->dtypeUsage(DataType{toElementType(dtype)});
    *usage = (set.contains(DTypeUsage::Storage) ? KILN_USAGE_STORAGE : 0) |
             (set.contains(DTypeUsage::Arithmetic) ? KILN_USAGE_ARITHMETIC : 0) |
             (set.contains(DTypeUsage::Accelerated) ? KILN_USAGE_ACCELERATED : 0);
    return ok();
  });
}

kiln_status kiln_nccl_info(int *device_count, int *version, char *reason, size_t size) {
  return guarded(__func__, [&] {
    if (!device_count || !version || (reason && size == 0))
      return invalid(__func__, "NULL device_count or version, or a reason of size 0");
    *device_count = communicatorDeviceCount();
    *version = ncclStatus().version;
    if (reason) {
      std::string text = communicatorUnavailableReason();
      size_t n = std::min(text.size(), size - 1);
      std::memcpy(reason, text.data(), n);
      reason[n] = '\0';
    }
    return ok();
  });
}

kiln_status kiln_nccl_unique_id(uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES]) {
  return guarded(__func__, [&] {
    if (!id)
      return invalid(__func__, "id must not be NULL");
    auto created = NcclUniqueId::create();
    if (!created)
      return fromError(created.error());
    std::memcpy(id, created->bytes.data(), NcclUniqueId::kBytes);
    return ok();
  });
}

kiln_status kiln_communicator_create(kiln_backend *backend,
                                     const uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES], int rank,
                                     int size, int64_t timeout_ms, kiln_communicator **comm) {
  return guarded(__func__, [&] {
    if (!backend || !id || !comm || timeout_ms < 0)
      return invalid(__func__, "NULL backend, id or comm, or a negative timeout");
    auto uniqueId = NcclUniqueId::fromBytes({id, NcclUniqueId::kBytes});
    if (!uniqueId)
      return fromError(uniqueId.error());
    auto created = Communicator::create(borrowed(backend), *uniqueId, rank, size,
                                        timeoutOf(timeout_ms));
    if (!created)
      return fromError(created.error());
    *comm = new kiln_communicator{std::move(*created)};
    return ok();
  });
}

kiln_status kiln_communicator_create_local(kiln_backend *const *backends, size_t count,
                                           int64_t timeout_ms, kiln_communicator **comms) {
  return guarded(__func__, [&] {
    if (!backends || !comms || count == 0 || timeout_ms < 0)
      return invalid(__func__, "NULL backends or comms, no backends, or a negative timeout");
    std::vector<std::shared_ptr<Backend>> shared;
    for (size_t i = 0; i < count; ++i) {
      if (!backends[i])
        return invalid(__func__, "a NULL backend");
      shared.push_back(borrowed(backends[i]));
    }
    auto created = Communicator::createLocal(std::move(shared), timeoutOf(timeout_ms));
    if (!created)
      return fromError(created.error());
    for (size_t i = 0; i < count; ++i)
      comms[i] = new kiln_communicator{std::move((*created)[i])};
    return ok();
  });
}

void kiln_communicator_destroy(kiln_communicator *comm) { delete comm; }

kiln_status kiln_communicator_info(const kiln_communicator *comm, int *rank, int *size,
                                   uint64_t *sequence) {
  return guarded(__func__, [&] {
    if (!comm)
      return invalid(__func__, "comm must not be NULL");
    if (rank)
      *rank = comm->communicator->rank();
    if (size)
      *size = comm->communicator->size();
    if (sequence)
      *sequence = comm->communicator->sequence();
    return ok();
  });
}

kiln_status kiln_communicator_abort(kiln_communicator *comm) {
  return guarded(__func__, [&] {
    if (!comm)
      return invalid(__func__, "comm must not be NULL");
    comm->communicator->abort();
    return ok();
  });
}

kiln_status kiln_all_reduce(kiln_communicator *comm, kiln_tensor *x, kiln_reduce_op op,
                            kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!comm || !x || !validReduceOp(op))
      return invalid(__func__, "NULL comm or x, or an unknown reduce op");
    auto reduceOp = static_cast<ReduceOp>(op);
    if (!result)
      return check(comm->communicator->allReduceInPlace(x->tensor, reduceOp));
    return setResult(comm->communicator->allReduce(x->tensor, reduceOp), result);
  });
}

kiln_status kiln_all_gather(kiln_communicator *comm, const kiln_tensor *x, kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!comm || !x || !result)
      return invalid(__func__, "NULL comm, x or result");
    return setResult(comm->communicator->allGather(x->tensor), result);
  });
}

kiln_status kiln_reduce_scatter(kiln_communicator *comm, const kiln_tensor *x,
                                kiln_reduce_op op, kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!comm || !x || !result || !validReduceOp(op))
      return invalid(__func__, "NULL comm, x or result, or an unknown reduce op");
    return setResult(comm->communicator->reduceScatter(x->tensor, static_cast<ReduceOp>(op)),
                     result);
  });
}

kiln_status kiln_broadcast(kiln_communicator *comm, const kiln_tensor *x, int root,
                           kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!comm || !x || !result)
      return invalid(__func__, "NULL comm, x or result");
    return setResult(comm->communicator->broadcast(x->tensor, root), result);
  });
}

kiln_status kiln_send(kiln_communicator *comm, const kiln_tensor *x, int peer) {
  return guarded(__func__, [&] {
    if (!comm || !x)
      return invalid(__func__, "NULL comm or x");
    return check(comm->communicator->send(x->tensor, peer));
  });
}

kiln_status kiln_recv(kiln_communicator *comm, kiln_dtype dtype, const int64_t *shape,
                      size_t rank, int peer, kiln_tensor **result) {
  return guarded(__func__, [&] {
    if (!comm || !result || (rank && !shape) || !validDtype(dtype))
      return invalid(__func__, "NULL comm, shape or result, or an unknown dtype");
    return setResult(comm->communicator->recv(toDType(dtype),
                                              std::vector<int64_t>(shape, shape + rank), peer),
                     result);
  });
}

kiln_status kiln_group(kiln_status (*calls)(void *context), void *context) {
  return guarded(__func__, [&] {
    if (!calls)
      return invalid(__func__, "calls must not be NULL");
    kiln_status inner = ok();
    std::string innerMessage;
    auto grouped = Communicator::group([&]() -> Expected<void> {
      inner = calls(context);
      innerMessage = inner.message ? inner.message : "";
      return {};
    });
    if (inner.code != KILN_OK)
      return status(inner.code, innerMessage);
    return check(grouped);
  });
}

} // extern "C"
