/*===- kiln.h - the kiln backend from C (C11) ----------------------------===*
 *
 * Every call returns a kiln_status: KILN_OK, or an error code with a message
 * that says what and where. The message stays valid until the next kiln
 * call on the same thread. No C++ exception crosses this interface.
 *
 * Objects (backends, tensors, graphs) are created by kiln_*_create-style
 * calls and released by the matching kiln_*_destroy. A tensor belongs to
 * the backend that made it: every other backend, even of the same device,
 * refuses it (KILN_INVALID_ARGUMENT). It may outlive its backend (it keeps
 * the device alive) and is then only destroyed. One thread at a time per
 * backend and its tensors.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT,
  KILN_COMPILE,
  KILN_LAUNCH,
  KILN_OUT_OF_MEMORY,
  KILN_UNSUPPORTED,
  KILN_DEVICE_POISONED,
  KILN_INTERNAL, /* a bug in kiln: please report the message */
} kiln_status_code;

typedef struct kiln_status {
  kiln_status_code code;
  const char *message; /* "" for KILN_OK */
} kiln_status;

/* Element types (bool is stored as one byte; the f8 formats, one byte
   each, are storage types that kernels compute on in f32). */
typedef enum kiln_dtype {
  KILN_F64, KILN_F32, KILN_F16, KILN_BF16,
  KILN_I8, KILN_I16, KILN_I32, KILN_I64,
  KILN_U8, KILN_U16, KILN_U32, KILN_U64,
  KILN_BOOL, KILN_F8E4M3FN, KILN_F8E5M2,
} kiln_dtype;

typedef struct kiln_backend kiln_backend;
typedef struct kiln_tensor kiln_tensor;
typedef struct kiln_graph kiln_graph;

/* Devices: "cpu", "cuda[:N]", "vulkan[:N]". A kind with no device here
 * counts 0 (not an error). */
kiln_status kiln_device_count(const char *kind, int *count);
kiln_status kiln_backend_create(const char *device, kiln_backend **backend);
void kiln_backend_destroy(kiln_backend *backend);
/* "cuda:0 (NVIDIA H200)", truncated to fit `size` bytes with the NUL. */
kiln_status kiln_backend_name(kiln_backend *backend, char *name, size_t size);
/* Random ops draw keys from the backend's seed: kiln.random_uniform and
 * kiln.random_normal through kiln_apply with no inputs take the next key,
 * and kiln_random_key gives it as a rank-0 i64 tensor, the seed input of a
 * program's random ops in kiln_run. The same seed gives the same sequence
 * of keys, so the same bits; a seed operand given explicitly is the key. */
kiln_status kiln_seed(kiln_backend *backend, uint64_t seed);
kiln_status kiln_random_key(kiln_backend *backend, kiln_tensor **key);
kiln_status kiln_sync(kiln_backend *backend);
kiln_status kiln_flush(kiln_backend *backend);

/* Tensors: `bytes` must be the tensor's exact size; a negative dim or a
 * size beyond 63 bits is KILN_INVALID_ARGUMENT. */
kiln_status kiln_tensor_from_host(kiln_backend *backend, kiln_dtype dtype,
                                  const int64_t *shape, size_t rank,
                                  const void *data, size_t bytes,
                                  kiln_tensor **tensor);
kiln_status kiln_tensor_to_host(kiln_backend *backend, const kiln_tensor *tensor,
                                void *data, size_t bytes);
/* Overwrites a tensor (refreshing a captured graph's inputs). */
kiln_status kiln_tensor_write(kiln_backend *backend, kiln_tensor *tensor,
                              const void *data, size_t bytes);
/* dtype, rank and up to `max_rank` dims. */
kiln_status kiln_tensor_info(const kiln_tensor *tensor, kiln_dtype *dtype,
                             size_t *rank, int64_t *shape, size_t max_rank);
void kiln_tensor_destroy(kiln_tensor *tensor);

/* Ops: a whole kiln program (its @main), or one op of the dialect with its
 * result type given ("kiln.add", attrs like "dims = array<i64: 1>" or NULL). */
kiln_status kiln_run(kiln_backend *backend, const char *program,
                     kiln_tensor *const *inputs, size_t input_count,
                     kiln_tensor **outputs, size_t max_outputs, size_t *output_count);
kiln_status kiln_apply(kiln_backend *backend, const char *op,
                       kiln_tensor *const *inputs, size_t input_count,
                       kiln_dtype result_dtype, const int64_t *result_shape,
                       size_t result_rank, const char *attrs, kiln_tensor **result);
/* Programs may have `?` dims (tensor<?x4xf32>): one compiled program runs
 * at every size; inputs that do not fit are KILN_INVALID_ARGUMENT naming the
 * dims. kiln_apply takes a kernel dynamic in a dim that an op keeps
 * changing (automatic dynamic shapes, docs/dynamic-shapes.md): on unless
 * KILN_AUTO_DYNAMIC=0; `enabled` 0 turns it off for this backend. */
kiln_status kiln_auto_dynamic(kiln_backend *backend, int enabled);

/* Profiling windows: `measured` is 0 when the window could not be measured
 * (then `milliseconds` is left alone: never a made-up zero). */
typedef struct kiln_profile_token {
  uint64_t id;
  uint64_t stream;
} kiln_profile_token;
kiln_status kiln_profile_start(kiln_backend *backend, kiln_profile_token *token);
kiln_status kiln_profile_end(kiln_backend *backend, kiln_profile_token token,
                             double *milliseconds, int *measured);
kiln_status kiln_profile_abandon(kiln_backend *backend, kiln_profile_token token);

/* Graphs: prepare (persistent allocations), capture, replay. */
kiln_status kiln_graph_prepare(kiln_backend *backend);
kiln_status kiln_graph_start_capture(kiln_backend *backend);
kiln_status kiln_graph_stop_capture(kiln_backend *backend, kiln_graph **graph);
kiln_status kiln_graph_replay(kiln_backend *backend, const kiln_graph *graph);
void kiln_graph_destroy(kiln_graph *graph);

/* Memory. */
typedef struct kiln_memory_usage {
  size_t number_allocs, bytes_in_use, bytes_padding, bytes_reserved;
} kiln_memory_usage;
typedef struct kiln_pool_report {
  char name[32];
  size_t page_size, pages, pages_peak, largest_alloc;
} kiln_pool_report;
kiln_status kiln_memory_usage_get(kiln_backend *backend, kiln_memory_usage *usage);
/* Fills up to `max_reports`; `count` gets how many pools there are. */
kiln_status kiln_memory_pool_report(kiln_backend *backend, kiln_pool_report *reports,
                                    size_t max_reports, size_t *count);
kiln_status kiln_memory_cleanup(kiln_backend *backend);
kiln_status kiln_memory_persistent_allocations(kiln_backend *backend, int persistent);

/* Dtypes: usage flags as below. */
enum { KILN_USAGE_STORAGE = 1, KILN_USAGE_ARITHMETIC = 2, KILN_USAGE_ACCELERATED = 4 };
kiln_status kiln_supports_dtype(kiln_backend *backend, kiln_dtype dtype, int *supported);
kiln_status kiln_dtype_usage(kiln_backend *backend, kiln_dtype dtype, unsigned *usage);

/* Collectives across CUDA devices through NCCL (docs/multi-gpu.md), on
 * tensors of a CUDA backend, queued on its device's stream. A collective
 * that does not complete within the communicator's timeout (timeout_ms, or
 * KILN_NCCL_TIMEOUT_MS when 0; default 5 minutes) is aborted: its
 * communicator and device are then KILN_DEVICE_POISONED, with a message
 * naming the op, its sequence number and the ranks that did not arrive. */
typedef struct kiln_communicator kiln_communicator;
typedef enum kiln_reduce_op {
  KILN_REDUCE_SUM, KILN_REDUCE_PROD, KILN_REDUCE_MAX, KILN_REDUCE_MIN, KILN_REDUCE_AVG,
} kiln_reduce_op;
enum { KILN_NCCL_UNIQUE_ID_BYTES = 128 };
/* CUDA devices a communicator can use (0 without NCCL or a GPU: not an
 * error), NCCL's version code (22703 for 2.27.3; 0 without NCCL) and why
 * there are none ("" otherwise) in `reason` (NULL: not wanted), truncated
 * to `size` bytes with the NUL. */
kiln_status kiln_nccl_info(int *device_count, int *version, char *reason, size_t size);
/* A fresh communicator id for every rank's create (ncclGetUniqueId). */
kiln_status kiln_nccl_unique_id(uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES]);
/* Rank `rank` of `size` on the backend's CUDA device (one process per GPU);
 * the backend must outlive the communicator. */
kiln_status kiln_communicator_create(kiln_backend *backend,
                                     const uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES], int rank,
                                     int size, int64_t timeout_ms, kiln_communicator **comm);
/* One communicator over `count` backends' devices driven by this process:
 * comms[i] is rank i. Issue each rank's collectives in one kiln_group. */
kiln_status kiln_communicator_create_local(kiln_backend *const *backends, size_t count,
                                           int64_t timeout_ms, kiln_communicator **comms);
void kiln_communicator_destroy(kiln_communicator *comm);
/* rank, size and the last collective's sequence number (any may be NULL). */
kiln_status kiln_communicator_info(const kiln_communicator *comm, int *rank, int *size,
                                   uint64_t *sequence);
kiln_status kiln_communicator_abort(kiln_communicator *comm);
/* `result` NULL: in place. */
kiln_status kiln_all_reduce(kiln_communicator *comm, kiln_tensor *x, kiln_reduce_op op,
                            kiln_tensor **result);
/* The ranks' tensors concatenated along dim 0. */
kiln_status kiln_all_gather(kiln_communicator *comm, const kiln_tensor *x, kiln_tensor **result);
/* The reduction split along dim 0 (a multiple of the size): part `rank`. */
kiln_status kiln_reduce_scatter(kiln_communicator *comm, const kiln_tensor *x,
                                kiln_reduce_op op, kiln_tensor **result);
kiln_status kiln_broadcast(kiln_communicator *comm, const kiln_tensor *x, int root,
                           kiln_tensor **result);
kiln_status kiln_send(kiln_communicator *comm, const kiln_tensor *x, int peer);
kiln_status kiln_recv(kiln_communicator *comm, kiln_dtype dtype, const int64_t *shape,
                      size_t rank, int peer, kiln_tensor **result);
/* Runs `calls(context)` as one NCCL group (send/recv pairs, the ranks of a
 * local communicator); its status is returned when not KILN_OK. */
kiln_status kiln_group(kiln_status (*calls)(void *context), void *context);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
