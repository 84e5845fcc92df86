/* 2 + 3 through the installed C API. */
#include <kiln/kiln.h>

#include <stdio.h>

int main(void) {
  kiln_backend *backend;
  kiln_status s = kiln_backend_create("cpu", &backend);
  if (s.code != KILN_OK) {
    fprintf(stderr, "%s\n", s.message);
    return 1;
  }
  int64_t shape[1] = {1};
  float two = 2.0f, three = 3.0f, sum = 0.0f;
  kiln_tensor *a, *b, *c;
  kiln_tensor_from_host(backend, KILN_F32, shape, 1, &two, sizeof two, &a);
  kiln_tensor_from_host(backend, KILN_F32, shape, 1, &three, sizeof three, &b);
  kiln_tensor *inputs[2] = {a, b};
  s = kiln_apply(backend, "kiln.add", inputs, 2, KILN_F32, shape, 1, NULL, &c);
  if (s.code == KILN_OK)
    s = kiln_tensor_to_host(backend, c, &sum, sizeof sum);
  printf("2 + 3 = %g\n", sum);
  kiln_tensor_destroy(a);
  kiln_tensor_destroy(b);
  if (s.code == KILN_OK)
    kiln_tensor_destroy(c);
  kiln_backend_destroy(backend);
  return sum == 5.0f ? 0 : 1;
}
