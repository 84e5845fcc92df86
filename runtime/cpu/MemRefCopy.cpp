//===- MemRefCopy.cpp - memrefCopy for CPU kernels, without MLIR ---------===//
//
// The one MLIR runner-utilities function kiln's CPU kernels call (for
// copies between strided views): `memrefCopy(elementSize, source,
// destination)` over unranked memref descriptors, the ABI of
// mlir/ExecutionEngine/CRunnerUtils.h. In libkiln-cpu-runtime.so, so that a
// kernel linked into a shared object needs nothing of libMLIR.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor; // {base, data, offset, sizes[rank], strides[rank]}
};

struct View {
  explicit View(const UnrankedMemRef &m) : rank(m.rank) {
    auto *d = static_cast<char **>(m.descriptor);
    data = d[1];
    auto *fields = reinterpret_cast<int64_t *>(d + 2);
    offset = fields[0];
    sizes = fields + 1;
    strides = fields + 1 + rank;
  }
  int64_t rank;
  char *data;
  int64_t offset;
  const int64_t *sizes, *strides;
};
} // namespace

extern "C" __attribute__((visibility("default"))) void
memrefCopy(int64_t elementSize, UnrankedMemRef *source, UnrankedMemRef *destination) {
  View from(*source), to(*destination);
  int64_t count = 1;
  for (int64_t d = 0; d < from.rank; ++d)
    count *= from.sizes[d];
  if (count == 0)
    return;
  char *src = from.data + from.offset * elementSize;
  char *dst = to.data + to.offset * elementSize;
  // Walks every index in row-major order, one element at a time; the
  // innermost dim is copied as one block where both sides are contiguous.
  std::vector<int64_t> index(from.rank, 0);
  int64_t inner = from.rank ? from.sizes[from.rank - 1] : 1;
  bool innerDense = from.rank == 0 ||
                    (from.strides[from.rank - 1] == 1 && to.strides[to.rank - 1] == 1);
  for (;;) {
    int64_t srcOffset = 0, dstOffset = 0;
    for (int64_t d = 0; d + 1 < from.rank; ++d) {
      srcOffset += index[d] * from.strides[d];
      dstOffset += index[d] * to.strides[d];
    }
    if (innerDense) {
      std::memcpy(dst + dstOffset * elementSize, src + srcOffset * elementSize,
                  static_cast<size_t>(inner * elementSize));
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(dst + (dstOffset + i * to.strides[to.rank - 1]) * elementSize,
                    src + (srcOffset + i * from.strides[from.rank - 1]) * elementSize,
                    static_cast<size_t>(elementSize));
    }
    // Next index over the outer dims.
    int64_t d = from.rank - 2;
    for (; d >= 0; --d) {
      if (++index[d] < from.sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}
