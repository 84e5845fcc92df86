//===- ReductionChain.h - chains of reductions and row-wise ops -*- C++ -*-===//
//
// A softmax, log_softmax, layer_norm or rms_norm reaches a target as several
// linalg ops on buffers over the same loops: reductions over one loop (a
// row's max, sum, sum of squares) and elementwise ops that read them, each
// a pass over the whole tensor through temporaries as large as the input.
// A ReductionChain is such a run of ops in one block, checked so that a
// target may run it row by row (kiln-cpu-row-kernels: rows or slabs of
// columns; kiln-gpu-column-chains: a column per thread), each row through
// every stage in turn.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_COMMON_REDUCTIONCHAIN_H
#define KILN_LOWERING_COMMON_REDUCTIONCHAIN_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace kiln {

/// The buffer that `v` is a view of (itself if none).
mlir::Value rootOf(mlir::Value v);

/// A chain of stages (generics over the same loop ranges and reduced loop,
/// each a reduction over that loop or elementwise) and the fills and
/// movable ops (pure ops, allocations, deallocations) between them. Every
/// buffer the chain writes is a buffer of its own, reached only through
/// that value and accessed row by row (indexed by the loops in order, with
/// or without the reduced one), so each row reads what it read when every
/// stage ran over all rows before the next.
class ReductionChain {
public:
  /// The candidate chains of `block`, each from its first op to its last
  /// stage; `analyze` checks one.
  static llvm::SmallVector<ReductionChain, 0> chainsIn(mlir::Block &block);

  /// Finds the reduced loop and checks the chain's accesses. What comes
  /// before its first stage (or a fill of what it writes) leaves it.
  mlir::LogicalResult analyze();

  /// The stages and the fills and movable ops between them, in order.
  llvm::ArrayRef<mlir::Operation *> ops() const { return chainOps; }
  llvm::ArrayRef<mlir::linalg::GenericOp> stages() const { return generics; }
  /// The loop the reductions reduce: the innermost (a row chain, as a
  /// softmax over the last dim) or an outer one with parallel loops inside
  /// it (a column chain, as a softmax over dim 0).
  unsigned reducedLoop() const { return row; }
  unsigned innermostLoop() const { return last; }
  bool isColumnChain() const { return row != last; }
  /// The stages' loop ranges (`?` where known only at run time).
  llvm::ArrayRef<int64_t> ranges() const { return loopRanges; }
  /// Whether `op` is a fill of what the chain writes (its initial values).
  bool isFillStage(mlir::Operation *op) const;

  /// Allocations of an identity layout and scalar elements that only the
  /// chain's stages use (and deallocate): a row of each is all a row needs.
  llvm::SmallVector<mlir::memref::AllocOp> temporaries() const;

  /// The buffer whose rows `temporary` (one of `temporaries`) can share,
  /// where one is: the output of the last stage that uses it, an
  /// elementwise one reading it as it writes the output (same map and
  /// type) and not reading the output, where the output is no temporary,
  /// nothing before that stage touches it, and it is not in `shared`. That
  /// stage then updates the output in place (a softmax's exponentials go
  /// straight into its result).
  mlir::Value sharedOutput(mlir::Value temporary,
                           llvm::ArrayRef<mlir::memref::AllocOp> temporaries,
                           const llvm::SmallPtrSetImpl<mlir::Value> &shared) const;

  /// Moves the pure ops and allocations between the stages before the
  /// first op, out of the way of the loop a target puts there; returns the
  /// deallocations, for the target to move after its loop.
  llvm::SmallVector<mlir::Operation *> moveOutOfTheWay(mlir::RewriterBase &rewriter) const;

  /// Erases the stages and fills, which the target's loop replaced.
  void eraseStages(mlir::RewriterBase &rewriter) const;

  /// The deallocations of `temporary`, which go when it does.
  static void appendDeallocations(mlir::memref::AllocOp temporary,
                                  llvm::SmallVectorImpl<mlir::Operation *> &erased);

private:
  explicit ReductionChain(llvm::SmallVector<mlir::Operation *> ops) : chainOps(std::move(ops)) {}
  mlir::LogicalResult checkAccesses() const;

  llvm::SmallVector<mlir::Operation *> chainOps;
  llvm::SmallVector<mlir::linalg::GenericOp> generics;
  llvm::SetVector<mlir::Value> written; // the roots of the stages' outputs
  llvm::SmallVector<int64_t> loopRanges;
  unsigned row = 0;
  unsigned last = 0;
};

} // namespace kiln

#endif
