//===- RunTimeSizes.h - one run's sizes from its inputs ---------*- C++ -*-===//
//
// A program with `?` dims has a shape class (TensorSignature: sizes and
// named run-time sizes; SizeRule: sums and bounds). A run binds each name to
// the size its inputs give (or its sum), checks every other dim and rule,
// and computes the outputs' shapes from the names.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_BACKEND_RUNTIMESIZES_H
#define KILN_BACKEND_RUNTIMESIZES_H

#include "kiln/Lowering/Compiler.h"

namespace kiln {

struct RunTimeSizes {
  std::vector<std::vector<int64_t>> outputShapes;
  /// Every dim of every input, then of every output: the sizes a CPU
  /// program's entry reads its `?` dims from.
  std::vector<int64_t> dims;
};

/// InvalidArgument naming the input and dim where `shapes` (one per input)
/// do not fit the signature and `rules`: a rank or static size that
/// differs, two dims of one run-time size that differ, a dim shorter than
/// an op reads or other than a sum makes it.
Expected<RunTimeSizes> bindRunTimeSizes(const std::vector<TensorSignature> &inputs,
                                        const std::vector<TensorSignature> &outputs,
                                        const std::vector<SizeRule> &rules,
                                        const std::vector<std::vector<int64_t>> &shapes);

} // namespace kiln

#endif
