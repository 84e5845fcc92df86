//===- GpuPlanExtraction.h - host function -> GpuPlan -----------*- C++ -*-===//
#ifndef KILN_LOWERING_GPUPLANEXTRACTION_H
#define KILN_LOWERING_GPUPLANEXTRACTION_H

#include "kiln/runtime/GpuPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Reads the plan off `entry` once kernels are outlined and serialised:
/// allocations, views and gpu.launch_func ops become buffers and launches,
/// gpu.binary ops the PTX modules. Anything else on the host is an error
/// (emitted on the op).
mlir::FailureOr<GpuPlan> extractGpuPlan(mlir::ModuleOp module,
                                        mlir::func::FuncOp entry,
                                        size_t inputCount);

} // namespace kiln

#endif
