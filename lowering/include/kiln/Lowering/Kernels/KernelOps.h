//===- KernelOps.h - the kiln_kernel dialect ----------------------*- C++ -*-===//
#ifndef KILN_LOWERING_KERNELS_KERNELOPS_H
#define KILN_LOWERING_KERNELS_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "kiln/Lowering/Kernels/KernelOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "kiln/Lowering/Kernels/KernelOps.h.inc"

namespace kiln::kernel {
/// Adds the kiln_kernel dialect (compilers and kiln-opt parse it).
void registerKilnKernelDialect(mlir::DialectRegistry &registry);
} // namespace kiln::kernel

#endif
