//===- BlockLoop.h - launches of blocks that loop over work items -*- C++ -*-===//
//
// The kernels kiln-gpu-scans and kiln-gpu-arg-reductions build by hand are
// launches of fixed-size blocks over a number of work items (chunks, rows,
// slices of a row); a grid is capped at the device's limit, so a block takes
// items blockId, blockId + grid, ...
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_BLOCKLOOP_H
#define KILN_LOWERING_GPU_BLOCKLOOP_H

#include "mlir/IR/Builders.h"

namespace kiln {

/// Builds at `b`'s insertion point a gpu.launch of `threads`-thread blocks
/// over `items` items, at most `maxGridX` blocks, with one workgroup buffer
/// of each type in `workgroupBuffers`. `body(builder, item, threadId,
/// buffers)` builds one item; every thread of a block runs the same number
/// of items, so barriers inside `body` are reached by all of them.
void buildBlockLoop(mlir::OpBuilder &b, mlir::Location loc, int64_t items, int64_t threads,
                    int64_t maxGridX, mlir::TypeRange workgroupBuffers,
                    llvm::function_ref<void(mlir::OpBuilder &, mlir::Value, mlir::Value,
                                            mlir::ValueRange)>
                        body);

} // namespace kiln

#endif // KILN_LOWERING_GPU_BLOCKLOOP_H
