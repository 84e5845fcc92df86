/* The C API from C11: every device present (cpu always; vulkan and cuda
 * where this machine has them), each check printed; exit status 1 on any
 * failure. */
#include "kiln/kiln.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      ++failures;                                                              \
    }                                                                          \
  } while (0)
#define CHECK_OK(call)                                                         \
  do {                                                                         \
    kiln_status s_ = (call);                                                   \
    CHECK(s_.code == KILN_OK, "%s -> %d: %s", #call, s_.code, s_.message);     \
  } while (0)

static void exercise(const char *device) {
  kiln_backend *b = NULL;
  kiln_status s = kiln_backend_create(device, &b);
  if (s.code != KILN_OK) {
    CHECK(0, "create %s: %s", device, s.message);
    return;
  }
  char name[128];
  CHECK_OK(kiln_backend_name(b, name, sizeof name));
  printf("%s: %s\n", device, name);

  enum { N = 1000 };
  float x[N], w[N], out[N];
  for (int i = 0; i < N; ++i) {
    x[i] = (float)i * 0.5f;
    w[i] = 2.0f;
  }
  int64_t shape[1] = {N};
  kiln_tensor *tx = NULL, *tw = NULL, *sum = NULL;
  CHECK_OK(kiln_tensor_from_host(b, KILN_F32, shape, 1, x, sizeof x, &tx));
  CHECK_OK(kiln_tensor_from_host(b, KILN_F32, shape, 1, w, sizeof w, &tw));
  kiln_tensor *inputs[2] = {tx, tw};
  CHECK_OK(kiln_apply(b, "kiln.add", inputs, 2, KILN_F32, shape, 1, NULL, &sum));
  CHECK_OK(kiln_tensor_to_host(b, sum, out, sizeof out));
  CHECK(out[10] == 7.0f && out[N - 1] == (N - 1) * 0.5f + 2, "add: %g %g", out[10], out[N - 1]);

  /* f8 tensors hold one byte per element: e4m3 0x38 is 1, 0xC4 is -3,
     0x7F is NaN; a cast reads them as f32. */
  {
    uint8_t bits[3] = {0x38, 0xC4, 0x7F};
    float wide[3];
    int64_t three[1] = {3};
    kiln_tensor *t8 = NULL, *t32 = NULL;
    CHECK_OK(kiln_tensor_from_host(b, KILN_F8E4M3FN, three, 1, bits, sizeof bits, &t8));
    CHECK_OK(kiln_apply(b, "kiln.cast", &t8, 1, KILN_F32, three, 1, NULL, &t32));
    CHECK_OK(kiln_tensor_to_host(b, t32, wide, sizeof wide));
    CHECK(wide[0] == 1.0f && wide[1] == -3.0f && wide[2] != wide[2], "f8: %g %g %g", wide[0],
          wide[1], wide[2]);
    kiln_tensor_destroy(t8);
    kiln_tensor_destroy(t32);
  }

  /* Errors come back as codes with messages, never as crashes. */
  int64_t bad[1] = {N + 1};
  kiln_tensor *wrong = NULL;
  s = kiln_apply(b, "kiln.add", inputs, 2, KILN_F32, bad, 1, NULL, &wrong);
  CHECK(s.code != KILN_OK && strlen(s.message) > 0, "a wrong result shape is refused");
  s = kiln_tensor_to_host(b, sum, out, 4);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "bytes"), "%s", s.message);
  s = kiln_run(b, "func.func @main(", inputs, 2, NULL, 0, NULL);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "malformed program: %d %s", s.code, s.message);
  s = kiln_backend_create("tpu", &(kiln_backend *){NULL});
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "tpu"), "%s", s.message);

  /* Profiling: a measured window, and no measurement across a capture. */
  kiln_profile_token token;
  double ms = -1;
  int measured = 0;
  CHECK_OK(kiln_profile_start(b, &token));
  kiln_tensor *product = NULL;
  CHECK_OK(kiln_apply(b, "kiln.mul", inputs, 2, KILN_F32, shape, 1, NULL, &product));
  CHECK_OK(kiln_profile_end(b, token, &ms, &measured));
  CHECK(measured && ms > 0, "window: measured %d, %g ms", measured, ms);

  /* A graph of two launches, replayed on refreshed input. */
  kiln_graph *graph = NULL;
  kiln_tensor *t1 = NULL, *t2 = NULL;
  CHECK_OK(kiln_graph_prepare(b));
  CHECK_OK(kiln_graph_start_capture(b));
  CHECK_OK(kiln_apply(b, "kiln.mul", inputs, 2, KILN_F32, shape, 1, NULL, &t1));
  kiln_tensor *second[2] = {t1, tw};
  CHECK_OK(kiln_apply(b, "kiln.add", second, 2, KILN_F32, shape, 1, NULL, &t2));
  CHECK_OK(kiln_graph_stop_capture(b, &graph));
  for (int i = 0; i < N; ++i)
    x[i] = 1.0f;
  CHECK_OK(kiln_tensor_write(b, tx, x, sizeof x));
  CHECK_OK(kiln_graph_replay(b, graph));
  CHECK_OK(kiln_tensor_to_host(b, t2, out, sizeof out));
  CHECK(out[0] == 4.0f && out[N - 1] == 4.0f, "replay: %g", out[0]);

  kiln_memory_usage usage;
  size_t pools = 0;
  kiln_pool_report reports[32];
  CHECK_OK(kiln_memory_usage_get(b, &usage));
  CHECK(usage.number_allocs >= 4 && usage.bytes_reserved >= usage.bytes_in_use, "usage");
  CHECK_OK(kiln_memory_pool_report(b, reports, 32, &pools));
  CHECK(pools > 0 && strcmp(reports[pools - 1].name, "persistent") == 0, "reports");

  int supported = 0;
  unsigned flags = 0;
  CHECK_OK(kiln_supports_dtype(b, KILN_F32, &supported));
  CHECK_OK(kiln_dtype_usage(b, KILN_F32, &flags));
  CHECK(supported && (flags & KILN_USAGE_ARITHMETIC), "f32 usage %u", flags);

  kiln_graph_destroy(graph);
  kiln_tensor *all[] = {tx, tw, sum, product, t1, t2};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i)
    kiln_tensor_destroy(all[i]);
  CHECK_OK(kiln_memory_cleanup(b));
  kiln_backend_destroy(b);
}

/* Overflowing shapes and byte counts that do not match are refused. */
static void sizes(kiln_backend *b) {
  int64_t wraps[2] = {(int64_t)1 << 62, 4}; /* 2^66 bytes: a plain product is 0 */
  kiln_tensor *t = NULL;
  kiln_status s = kiln_tensor_from_host(b, KILN_F32, wraps, 2, NULL, 0, &t);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "overflow"), "[2^62, 4]: %d %s",
        s.code, s.message);
  int64_t negative[1] = {-4};
  s = kiln_tensor_from_host(b, KILN_F32, negative, 1, NULL, 0, &t);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "negative dim: %d %s", s.code, s.message);
  float data[4] = {1, 2, 3, 4};
  int64_t four[1] = {4};
  s = kiln_tensor_from_host(b, KILN_F32, four, 1, data, 8, &t);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "16 bytes"), "%s", s.message);
  kiln_tensor *seed = NULL, *r = NULL;
  CHECK_OK(kiln_random_key(b, &seed));
  s = kiln_apply(b, "kiln.random_uniform", &seed, 1, KILN_F32, wraps, 2, NULL, &r);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "random of [2^62, 4]: %d %s", s.code, s.message);
  kiln_tensor_destroy(seed);
}

/* A program with a `?` dim runs at two sizes; sizes that do not fit are
 * refused naming the dims; kiln_apply without automatic dynamic compiles
 * per size and stays right. */
static void dynamicShapes(kiln_backend *b) {
  const char *program =
      "func.func @main(%a: tensor<?x2xf32>, %b: tensor<?x2xf32>) -> tensor<?x2xf32> {\n"
      "  %0 = kiln.add %a, %b : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>\n"
      "  return %0 : tensor<?x2xf32>\n}\n";
  float data[6] = {1, 2, 3, 4, 5, 6}, out[6] = {0};
  for (int64_t rows = 1; rows <= 3; rows += 2) {
    int64_t shape[2] = {rows, 2};
    kiln_tensor *t = NULL, *sum = NULL;
    CHECK_OK(kiln_tensor_from_host(b, KILN_F32, shape, 2, data, rows * 2 * sizeof(float), &t));
    kiln_tensor *inputs[2] = {t, t};
    size_t count = 0;
    CHECK_OK(kiln_run(b, program, inputs, 2, &sum, 1, &count));
    CHECK_OK(kiln_tensor_to_host(b, sum, out, rows * 2 * sizeof(float)));
    CHECK(out[rows * 2 - 1] == 2 * data[rows * 2 - 1], "%d rows: %g", (int)rows, out[rows * 2 - 1]);
    kiln_tensor_destroy(sum);
    kiln_tensor_destroy(t);
  }
  int64_t one[2] = {1, 2}, three[2] = {3, 2};
  kiln_tensor *a = NULL, *c = NULL, *sum = NULL;
  CHECK_OK(kiln_tensor_from_host(b, KILN_F32, one, 2, data, 2 * sizeof(float), &a));
  CHECK_OK(kiln_tensor_from_host(b, KILN_F32, three, 2, data, sizeof data, &c));
  kiln_tensor *unequal[2] = {a, c};
  kiln_status s = kiln_run(b, program, unequal, 2, &sum, 1, NULL);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "input #1 dim 0 is 3"), "%d %s",
        s.code, s.message);
  CHECK_OK(kiln_auto_dynamic(b, 0));
  kiln_tensor *twice[2] = {c, c};
  CHECK_OK(kiln_apply(b, "kiln.add", twice, 2, KILN_F32, three, 2, NULL, &sum));
  CHECK_OK(kiln_tensor_to_host(b, sum, out, sizeof out));
  CHECK(out[5] == 12, "add of 3 rows: %g", out[5]);
  CHECK_OK(kiln_auto_dynamic(b, 1));
  kiln_tensor_destroy(sum);
  kiln_tensor_destroy(a);
  kiln_tensor_destroy(c);
}

/* kiln_seed reaches kiln_apply's random ops (no seed input given) and
 * kiln_run's (the seed input from kiln_random_key). */
static void draw(kiln_backend *b, uint64_t seed, float *out /* [3][16] */) {
  int64_t shape[1] = {16};
  const char *program =
      "func.func @main(%k: tensor<i64>) -> tensor<16xf32> {\n"
      "  %0 = kiln.random_normal %k : tensor<i64> -> tensor<16xf32>\n"
      "  return %0 : tensor<16xf32>\n}\n";
  kiln_tensor *t[3] = {NULL, NULL, NULL}, *key = NULL;
  size_t count = 0;
  CHECK_OK(kiln_seed(b, seed));
  CHECK_OK(kiln_apply(b, "kiln.random_uniform", NULL, 0, KILN_F32, shape, 1, NULL, &t[0]));
  CHECK_OK(kiln_apply(b, "kiln.random_normal", NULL, 0, KILN_F32, shape, 1, NULL, &t[1]));
  CHECK_OK(kiln_random_key(b, &key));
  CHECK_OK(kiln_run(b, program, &key, 1, &t[2], 1, &count));
  for (int i = 0; i < 3; ++i) {
    if (t[i])
      CHECK_OK(kiln_tensor_to_host(b, t[i], out + 16 * i, 16 * sizeof(float)));
    kiln_tensor_destroy(t[i]);
  }
  kiln_tensor_destroy(key);
}

static void seeds(kiln_backend *b) {
  float first[48] = {0}, again[48] = {0}, other[48] = {0};
  draw(b, 11, first);
  draw(b, 11, again);
  draw(b, 12, other);
  for (int i = 0; i < 3; ++i) {
    CHECK(memcmp(first + 16 * i, again + 16 * i, 16 * sizeof(float)) == 0,
          "path %d: the same seed gave other bits", i);
    CHECK(memcmp(first + 16 * i, other + 16 * i, 16 * sizeof(float)) != 0,
          "path %d: another seed gave the same bits", i);
  }
}

/* A tensor is used by the backend that made it: another backend of the
 * same device, or of another device, refuses it, also once its own
 * backend is gone (it read another buffer at the same address, or wrote
 * through the CPU into a Vulkan address and crashed). */
static void ownership(const char *device) {
  kiln_backend *mine = NULL, *other = NULL, *cpu = NULL;
  CHECK_OK(kiln_backend_create(device, &mine));
  CHECK_OK(kiln_backend_create(device, &other));
  CHECK_OK(kiln_backend_create("cpu", &cpu));
  if (!mine || !other || !cpu)
    return;
  float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {-1, -1, -1, -1, -1, -1, -1, -1}, out[8];
  int64_t shape[1] = {8};
  kiln_tensor *ta = NULL, *tb = NULL, *r = NULL;
  CHECK_OK(kiln_tensor_from_host(mine, KILN_F32, shape, 1, a, sizeof a, &ta));
  CHECK_OK(kiln_tensor_from_host(other, KILN_F32, shape, 1, b, sizeof b, &tb));
  kiln_status s = kiln_tensor_to_host(other, ta, out, sizeof out);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "another backend"), "read: %s",
        s.message);
  s = kiln_tensor_write(other, ta, b, sizeof b);
  CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "another backend"), "write: %s",
        s.message);
  s = kiln_apply(other, "kiln.neg", &ta, 1, KILN_F32, shape, 1, NULL, &r);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "apply: %s", s.message);
  if (strcmp(device, "cpu") != 0) {
    s = kiln_tensor_write(cpu, ta, b, sizeof b);
    CHECK(s.code == KILN_INVALID_ARGUMENT && strstr(s.message, "lives on"), "write: %s",
          s.message);
  }
  kiln_backend_destroy(mine);
  s = kiln_tensor_to_host(other, ta, out, sizeof out);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "read after its backend went: %s", s.message);
  CHECK_OK(kiln_tensor_to_host(other, tb, out, sizeof out));
  CHECK(out[0] == -1 && out[7] == -1, "the other backend's tensor: %g %g", out[0], out[7]);
  kiln_tensor_destroy(ta);
  kiln_tensor_destroy(tb);
  kiln_backend_destroy(other);
  kiln_backend_destroy(cpu);
}

/* Communicators: without NCCL or a GPU, none and a reason; a CPU backend is
 * refused; with them, a one-rank all_reduce (in place) on cuda:0. */
struct SelfExchange {
  kiln_communicator *comm;
  kiln_tensor *x, *received;
};

static kiln_status exchangeWithSelf(void *context) {
  struct SelfExchange *e = (struct SelfExchange *)context;
  kiln_status s = kiln_send(e->comm, e->x, 0);
  if (s.code != KILN_OK)
    return s;
  int64_t shape[1] = {8};
  return kiln_recv(e->comm, KILN_F32, shape, 1, 0, &e->received);
}

static void communicators(void) {
  int devices = -1, version = -1;
  char reason[256];
  CHECK_OK(kiln_nccl_info(&devices, &version, reason, sizeof reason));
  printf("nccl: %d device(s), version %d%s%s\n", devices, version, devices ? "" : ": ",
         reason);
  CHECK(devices > 0 || strlen(reason) > 0, "no devices and no reason");
  uint8_t id[KILN_NCCL_UNIQUE_ID_BYTES] = {0};
  kiln_backend *cpu = NULL;
  kiln_communicator *comm = NULL;
  CHECK_OK(kiln_backend_create("cpu", &cpu));
  kiln_status s = kiln_communicator_create(cpu, id, 0, 1, 0, &comm);
  CHECK(s.code == KILN_UNSUPPORTED && strstr(s.message, "cpu:0 is not one"), "cpu: %s",
        s.message);
  s = kiln_all_reduce(NULL, NULL, KILN_REDUCE_SUM, NULL);
  CHECK(s.code == KILN_INVALID_ARGUMENT, "NULL comm: %s", s.message);
  kiln_backend_destroy(cpu);
  if (devices == 0)
    return;
  kiln_backend *gpu = NULL;
  CHECK_OK(kiln_backend_create("cuda:0", &gpu));
  CHECK_OK(kiln_nccl_unique_id(id));
  CHECK_OK(kiln_communicator_create(gpu, id, 0, 1, 60000, &comm));
  if (!comm) {
    kiln_backend_destroy(gpu);
    return;
  }
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8] = {0};
  int64_t shape[1] = {8};
  kiln_tensor *t = NULL, *gathered = NULL;
  CHECK_OK(kiln_tensor_from_host(gpu, KILN_F32, shape, 1, x, sizeof x, &t));
  CHECK_OK(kiln_all_reduce(comm, t, KILN_REDUCE_MAX, NULL));
  CHECK_OK(kiln_all_gather(comm, t, &gathered));
  CHECK_OK(kiln_tensor_to_host(gpu, gathered, out, sizeof out));
  CHECK(out[0] == 1 && out[7] == 8, "all_gather of one rank: %g %g", out[0], out[7]);
  struct SelfExchange exchange = {comm, t, NULL};
  CHECK_OK(kiln_group(exchangeWithSelf, &exchange));
  if (exchange.received) {
    CHECK_OK(kiln_tensor_to_host(gpu, exchange.received, out, sizeof out));
    CHECK(out[0] == 1 && out[7] == 8, "recv from self: %g %g", out[0], out[7]);
    kiln_tensor_destroy(exchange.received);
  }
  int rank = -1, size = -1;
  uint64_t sequence = 0;
  CHECK_OK(kiln_communicator_info(comm, &rank, &size, &sequence));
  CHECK(rank == 0 && size == 1 && sequence == 4, "info: %d %d %llu", rank, size,
        (unsigned long long)sequence);
  kiln_tensor_destroy(gathered);
  kiln_tensor_destroy(t);
  kiln_communicator_destroy(comm);
  kiln_backend_destroy(gpu);
}

int main(void) {
  const char *kinds[] = {"cpu", "vulkan", "cuda"};
  for (int i = 0; i < 3; ++i) {
    int count = 0;
    CHECK_OK(kiln_device_count(kinds[i], &count));
    if (count == 0) {
      printf("%s: no device here, skipped\n", kinds[i]);
      continue;
    }
    exercise(kinds[i]);
    kiln_backend *b = NULL;
    CHECK_OK(kiln_backend_create(kinds[i], &b));
    if (b) {
      sizes(b);
      seeds(b);
      dynamicShapes(b);
      kiln_backend_destroy(b);
    }
    ownership(kinds[i]);
  }
  communicators();
  printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
