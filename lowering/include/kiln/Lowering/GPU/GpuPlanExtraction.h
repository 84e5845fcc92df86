//===- GpuPlanExtraction.h - host function -> GpuPlan -----------*- C++ -*-===//
#ifndef KILN_LOWERING_GPU_GPUPLANEXTRACTION_H
#define KILN_LOWERING_GPU_GPUPLANEXTRACTION_H

#include "kiln/runtime/common/GpuPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// Reads the plan off `entry` once kernels are outlined and serialised:
/// allocations, views and gpu.launch_func ops become buffers and launches
/// of the binaries in `kernelModules` (by gpu.module name: PTX or SPIR-V).
/// memref.dim and index arithmetic become the plan's SizeSteps (a program
/// with `?` dims); index scalars are `indexBytes` wide in kernels. Anything
/// else on the host is an error (emitted on the op).
mlir::FailureOr<GpuPlan>
extractGpuPlan(mlir::func::FuncOp entry, size_t inputCount,
               const llvm::StringMap<std::string> &kernelModules, unsigned indexBytes);

} // namespace kiln

#endif
