//===- fuzz-npy.cpp - libFuzzer target: the .npy reader -------------------===//
//
// Any bytes are a .npy file to parseNpy: it returns a tensor whose data is
// exactly its shape's size, or an error with a message, never a crash.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime/common/Npy.h"

#include <cstdlib>
#include <cstdio>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  kiln::Expected<kiln::HostTensor> tensor = kiln::parseNpy(bytes, "fuzz.npy");
  if (!tensor) {
    if (tensor.error().message.empty())
      std::abort(); // every error says what went wrong
    return 0;
  }
  size_t want = static_cast<size_t>(tensor->numElements()) * kiln::dtypeSize(tensor->dtype);
  if (tensor->numElements() < 0 || tensor->data.size() != want) {
    std::fprintf(stderr, "tensor of %zu bytes for shape %s\n", tensor->data.size(),
                 kiln::shapeToString(tensor->shape).c_str());
    std::abort();
  }
  return 0;
}
