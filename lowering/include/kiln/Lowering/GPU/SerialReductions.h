//===- SerialReductions.h - reductions a thread runs serially --*- C++ -*-===//
//
// How far a GPU thread reduces serially: kiln-gpu-normalize-reductions
// gives a reduction read across its outputs (a column sum, a channel mean)
// a thread per output on these terms, and kiln-gpu-column-chains runs a
// chain of short ones (a softmax over 21 channels) a column per thread.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_SERIALREDUCTIONS_H
#define KILN_LOWERING_GPU_SERIALREDUCTIONS_H

#include <cstdint>

namespace kiln {

/// A thread per output reduces at most this many elements serially...
constexpr int64_t kMaxSerialReduction = 4096;
/// ... where its outputs fill the GPU (64 blocks of 256 threads) or its
/// reduction is this short (a block per output would idle most threads).
constexpr int64_t kMinThreadPerOutputs = 16384;
constexpr int64_t kShortReduction = 64;
/// Loads a thread per output keeps in flight: its loop is unrolled so far
/// (one at a time, each a trip to memory, it ran at 2.7x its floor).
constexpr int64_t kSerialUnroll = 4;

/// Whether `outputs` reductions of `length` elements each run a thread per
/// output, serially.
constexpr bool isSerialPerOutput(int64_t outputs, int64_t length) {
  return length <= kMaxSerialReduction &&
         (outputs >= kMinThreadPerOutputs || length <= kShortReduction);
}

} // namespace kiln

#endif
