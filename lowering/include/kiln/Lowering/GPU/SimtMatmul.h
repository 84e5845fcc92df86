//===- SimtMatmul.h - the SIMT matmul kernel both GPU targets build -*- C++ -*-===//
//
// The classic SIMT GEMM (GpuSimtMatmulTunables), for kiln-cuda-tile-matmul
// (what the tensor-core kernels do not take) and kiln-spirv-simt-matmul
// (the f32-accumulating matmuls the cooperative-matrix kernel does not
// take, within the device's limits).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LOWERING_GPU_SIMTMATMUL_H
#define KILN_LOWERING_GPU_SIMTMATMUL_H

#include "kiln/Lowering/Common/MatmulKernels.h"
#include "kiln/Lowering/GPU/KernelTunables.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace kiln {

/// How a target's workgroup memory takes the kernel's 16-byte accesses.
enum class WorkgroupVectors {
  /// As vector loads and stores of scalar memory (CUDA's shared memory).
  Native,
  /// As one scalar access per lane: Vulkan's logical addressing has no
  /// pointer casts into Workgroup storage.
  ByLane,
};

/// Whether the SIMT kernel takes `op`: a linalg.matmul or batch_matmul on
/// buffers reading its operands in place (readsOperandsInPlace), f32, f16
/// or bf16 inputs, f32 C.
bool fitsSimtMatmul(mlir::linalg::LinalgOp op);

/// What the SIMT kernels of a target may be.
struct SimtMatmulTarget {
  /// Multiprocessors to fill (GpuSimtMatmulTunables::forOutput); 0: the
  /// default tiling, never narrowed.
  int64_t fillBlocks = 0;
  WorkgroupVectors workgroupVectors = WorkgroupVectors::Native;
  /// Workgroup memory and invocations a workgroup may have.
  int64_t maxWorkgroupBytes = 49152, maxInvocations = 1024;
};

/// Builds the SIMT kernels of `op` before it, launched only where `unmet`
/// (a host index counting other kernels' unmet requirements; null: none)
/// is 0. Static sizes take the tuned tiling (tune space gpu.matmul.simt;
/// one beyond the target's limits is an error, which the autotuner skips)
/// or the untuned one (GpuSimtMatmulTunables::forOutput); run-time sizes
/// two unsplit tilings, each launched where it suits the run's sizes
/// (narrow tiles where the default would not fill the GPU), or the default
/// alone for a `fillBlocks` of 0. Rows alone known at run time
/// (rowsOnlyAtRunTime) take, bucket by bucket of row counts up to
/// kRowBuckets' last, the tiling forOutput gives static rows, K split
/// too; the two run-time tilings above. An untuned tiling beyond the target's
/// limits gives way to the first candidate within them. `fused`'s fill and
/// epilogue are taken over; the caller erases them with `op`.
mlir::LogicalResult buildSimtMatmuls(mlir::linalg::LinalgOp op, const MatmulFusion &fused,
                                     mlir::Value unmet, const SimtMatmulTarget &target);

} // namespace kiln

#endif
