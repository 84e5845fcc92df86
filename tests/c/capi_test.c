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
  }
  printf("%s\n", failures ? "FAILED" : "PASSED");
  return failures ? 1 : 0;
}
