// Softmax of a row through the installed C++ API's typed ops.
#include "kiln/backend/Ops.h"

#include <cstdio>

int main() {
  auto backend = kiln::Backend::shared(kiln::DeviceId{});
  kiln::HostTensor host(kiln::DType::F32, {1, 4});
  for (int i = 0; i < 4; ++i)
    host.as<float>()[i] = 1.0f;
  auto x = (*backend)->upload(host);
  auto y = kiln::ops::softmax(*x, 1);
  if (!y) {
    std::fprintf(stderr, "%s\n", y.error().message.c_str());
    return 1;
  }
  float first = (*backend)->download(*y)->as<float>()[0];
  std::printf("softmax: %g\n", first);
  return first == 0.25f ? 0 : 1;
}
