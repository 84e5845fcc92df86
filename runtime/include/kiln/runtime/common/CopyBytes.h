//===- CopyBytes.h - memcpy for tensor data, empty tensors included -*- C++ -*-===//
#ifndef KILN_RUNTIME_COMMON_COPYBYTES_H
#define KILN_RUNTIME_COMMON_COPYBYTES_H

#include <cstring>

namespace kiln {

/// memcpy for tensor data: an empty tensor's pointers may be null, which
/// memcpy may not take even for 0 bytes (UBSan reports it).
inline void copyBytes(void *dst, const void *src, size_t bytes) {
  if (bytes)
    std::memcpy(dst, src, bytes);
}

} // namespace kiln

#endif
