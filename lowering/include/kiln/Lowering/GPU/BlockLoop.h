//===- BlockLoop.h - launches of blocks that loop over work items -*- C++ -*-===//
//
// The kernels kiln-gpu-scans and kiln-gpu-arg-reductions build by hand are
// launches of fixed-size blocks over a number of work items (chunks, rows,
// slices of a row); a grid is capped at the device's limit, so a block takes
// items blockId, blockId + grid, ...
//
// Their sizes are known at compile time or, in programs with `?` dims, only
// at run time: HostSizes keeps both kinds as OpFoldResults, folding
// constants and building the rest as host index arithmetic of the kinds
// the GPU plan evaluates (signed division, min, max).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_BLOCKLOOP_H
#define KILN_LOWERING_GPU_BLOCKLOOP_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace kiln {

/// Sizes as constants where known, host values where not; `b` is where
/// host arithmetic goes (before the launches that use it).
class HostSizes {
public:
  HostSizes(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}
  mlir::OpFoldResult mul(mlir::OpFoldResult x, mlir::OpFoldResult y);
  mlir::OpFoldResult ceilDiv(mlir::OpFoldResult x, mlir::OpFoldResult y);
  mlir::OpFoldResult div(mlir::OpFoldResult x, mlir::OpFoldResult y);
  mlir::OpFoldResult min(mlir::OpFoldResult x, mlir::OpFoldResult y);
  mlir::OpFoldResult max(mlir::OpFoldResult x, mlir::OpFoldResult y);
  /// `x` where `a > y` holds (whereGreater) or not (whereNotGreater), else
  /// 0: a variant's grid, empty where another variant runs.
  mlir::OpFoldResult whereGreater(mlir::OpFoldResult x, mlir::OpFoldResult a,
                                  mlir::OpFoldResult y);
  mlir::OpFoldResult whereNotGreater(mlir::OpFoldResult x, mlir::OpFoldResult a,
                                     mlir::OpFoldResult y);
  /// A buffer of `shape` (static where the sizes are constants).
  mlir::Value alloc(llvm::ArrayRef<mlir::OpFoldResult> shape, mlir::Type element);

private:
  mlir::Value value(mlir::OpFoldResult v);
  template <typename OpT>
  mlir::OpFoldResult fold(mlir::OpFoldResult x, mlir::OpFoldResult y,
                          int64_t (*op)(int64_t, int64_t));
  mlir::OpFoldResult where(bool greater, mlir::OpFoldResult x, mlir::OpFoldResult a,
                           mlir::OpFoldResult y);
  mlir::OpBuilder &b;
  mlir::Location loc;
};

/// `v` as an index value at `b` (a constant built there when static).
mlir::Value indexValue(mlir::OpBuilder &b, mlir::Location loc, mlir::OpFoldResult v);

/// Builds at `b`'s insertion point a gpu.launch of `threads`-thread blocks
/// over `items` items, at most `maxGridX` blocks, with one workgroup buffer
/// of each type in `workgroupBuffers`. `body(builder, item, threadId,
/// buffers)` builds one item; every thread of a block runs the same number
/// of items, so barriers inside `body` are reached by all of them. A
/// run-time count of 0 is an empty grid, which the runtime skips.
void buildBlockLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::OpFoldResult items,
                    int64_t threads, int64_t maxGridX, mlir::TypeRange workgroupBuffers,
                    llvm::function_ref<void(mlir::OpBuilder &, mlir::Value, mlir::Value,
                                            mlir::ValueRange)>
                        body);

/// Builds a gpu.launch of one `threads`-thread block per item, for counts
/// the caller knows to be at most 65535 (every device's grid): `body(builder,
/// item, threadId)` is the kernel's top level, where gpu.all_reduce may go
/// (its lowering needs a region of its own, not an scf.for's).
void buildBlockPerItem(mlir::OpBuilder &b, mlir::Location loc, mlir::OpFoldResult items,
                       int64_t threads,
                       llvm::function_ref<void(mlir::OpBuilder &, mlir::Value, mlir::Value)> body);

/// A thread's fold over positions begin + tid, begin + tid + threads, ...
/// below `end`, `unroll` positions an iteration (loads in flight), then one
/// at a time: `step(builder, position, carried)` gives the next carried
/// values; returns the last.
llvm::SmallVector<mlir::Value> buildThreadStrideLoop(
    mlir::OpBuilder &b, mlir::Location loc, mlir::Value begin, mlir::Value end, mlir::Value tid,
    int64_t threads, int64_t unroll, mlir::ValueRange init,
    llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::OpBuilder &, mlir::Value,
                                                      mlir::ValueRange)>
        step);

/// The gpu.all_reduce operation that combines a block's partials of a
/// `kind` reduction, if it has one.
std::optional<mlir::gpu::AllReduceOperation> allReduceOf(mlir::vector::CombiningKind kind);

/// Whether a block's threads can all-reduce partials of `accType`: the
/// row passes' shuffles move 32-bit words (f32, i32). Other accumulators
/// (f64, i64) are left to kiln-gpu-normalize-reductions.
bool allReducesOn(mlir::Type accType);

} // namespace kiln

#endif // KILN_LOWERING_GPU_BLOCKLOOP_H
