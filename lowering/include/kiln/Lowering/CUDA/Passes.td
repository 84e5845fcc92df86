//===- Passes.td - kiln lowering: passes of the CUDA target ---*- tablegen -*-===//
#ifndef KILN_LOWERING_CUDA_PASSES_TD
#define KILN_LOWERING_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCudaTileMatmul : Pass<"kiln-cuda-tile-matmul", "mlir::ModuleOp"> {
  let summary = "Matmul on buffers as a shared-memory tiled GPU kernel";
  let description = [{
    A linalg.matmul or batch_matmul of static f32, f16 or bf16 buffers
    accumulating into f32 becomes a
    gpu.launch: 128x128 output tiles per block of 256 threads, each thread
    accumulating 8x8 outputs in registers; the K dim advances 8 at a time
    through two workgroup buffers (A transposed, B) filled cooperatively,
    (inputs widened to f32 there) with bounds checks at the edges. The
    result is added to C, as linalg.matmul accumulates.

    With `tensor-cores` (sm_80 and later), contiguous f16/bf16 matmuls whose
    N and K are multiples of 8 instead take mma.sync m16n8k16 (and, with
    `tf32`, f32 matmuls whose N and K are multiples of 4 take tf32
    m16n8k8): 128 x `mma-tile-n` outputs per block of 8 warps, K in steps of
    `mma-step-bytes` through `mma-stages` swizzled buffers in dynamic shared
    memory filled by cp.async ahead of the math, fragments loaded by
    ldmatrix.

    With `wgmma` (sm_90a) the f16/bf16 ones take warpgroup MMA instead:
    128 x `wgmma-tile-n` outputs per block of two warpgroups reading both
    operands from 128-byte-swizzled shared memory, `wgmma-stages` deep.
    With `fill-blocks` (the GPU's SMs), the kernel is persistent (at most
    that many blocks, each taking tiles that many apart), and a static-sized
    matmul whose tiles would leave SMs idle splits K into parts (and,
    untuned, narrows its tiles): each part's block stores partial sums,
    which a second kernel adds into C through the epilogue. A static K that
    is no whole 16-byte units (TMA's strides) is read from zero-padded
    copies of A and of B transposed.
  }];
  let options = [
    Option<"tensorCores", "tensor-cores", "bool", "false",
           "f16/bf16 matmuls on mma.sync (sm_80+)">,
    Option<"tf32", "tf32", "bool", "false",
           "with tensor-cores: f32 matmuls too, inputs rounded to tf32">,
    Option<"mmaTileN", "mma-tile-n", "int64_t", "kiln::CudaMmaMatmulTunables{}.tileN",
           "output columns per block of the tensor-core kernel (64..256)">,
    Option<"mmaStages", "mma-stages", "int64_t", "kiln::CudaMmaMatmulTunables{}.stages",
           "shared-memory buffers of the tensor-core kernel's K pipeline">,
    Option<"mmaStepBytes", "mma-step-bytes", "int64_t",
           "kiln::CudaMmaMatmulTunables{}.stepBytes",
           "bytes of A's rows per K step of the tensor-core kernel (64 or 128)">,
    Option<"fillBlocks", "fill-blocks", "int64_t", "0",
           "blocks that fill the GPU (its SMs): an untuned tensor-core kernel "
           "that would launch fewer narrows its tile N (down to 64), the wgmma "
           "kernel splits K and runs at most that many blocks; 0: never">,
    Option<"wgmma", "wgmma", "bool", "false",
           "with tensor-cores: f16/bf16 matmuls on wgmma (sm_90a)">,
    Option<"wgmmaTileN", "wgmma-tile-n", "int64_t", "kiln::CudaWgmmaMatmulTunables{}.tileN",
           "output columns per block of the wgmma kernel (64, 128 or 256)">,
    Option<"wgmmaStages", "wgmma-stages", "int64_t", "kiln::CudaWgmmaMatmulTunables{}.stages",
           "shared-memory buffers of the wgmma kernel's K pipeline (3 or more)">,
    Option<"wgmmaSplitK", "wgmma-split-k", "int64_t", "0",
           "parts of K the wgmma kernel splits a static-sized matmul into (each "
           "a block; a second kernel adds them); 0: as fill-blocks chooses">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "232448",
           "shared memory a block may use (the device's opt-in limit; "
           "default: sm_90's)">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::math::MathDialect", "mlir::nvgpu::NVGPUDialect",
                           "mlir::NVVM::NVVMDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCudaMmaAttention : Pass<"kiln-cuda-mma-attention", "mlir::ModuleOp"> {
  let summary = "Fused attention of f16/bf16, head dims 64 and 128, on mma.sync";
  let description = [{
    kiln_kernel.attention on dense f16/bf16 buffers whose q and v head dims
    are 64 or 128 becomes a FlashAttention-2 gpu.launch (sm_80+): 128 query
    rows per block of 8 warps, Q fragments in registers, keys in tiles of 64
    through two cp.async shared-memory stages, S = Q K^T and O += P V on
    mma.sync m16n8k16 with the online softmax on the fragments (exponentials
    by ex2.approx). No score is stored. Other attention is left to
    kiln-attention-to-loops.
  }];
  let options = [
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "232448",
           "shared memory a block may use (the device's opt-in limit; "
           "default: sm_90's)">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::nvgpu::NVGPUDialect",
                           "mlir::NVVM::NVVMDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCudaWgmmaAttention : Pass<"kiln-cuda-wgmma-attention", "mlir::ModuleOp"> {
  let summary = "Fused attention of f16/bf16, head dims 64 and 128, on wgmma (sm_90a)";
  let description = [{
    kiln_kernel.attention on dense f16/bf16 buffers whose q and v head dims
    are 64 or 128 becomes a FlashAttention gpu.launch for sm_90a: 128 query
    rows per block of three warpgroups, a producer copying Q once and K and V
    in tiles of 128 keys by TMA into two swizzled stages, two consumers of 64
    rows each computing S = Q K^T on wgmma from shared memory, the online
    softmax on its accumulator, and O += P V on wgmma with P in registers. No
    score is stored. Other attention is left to kiln-cuda-mma-attention and
    kiln-attention-to-loops.
  }];
  let options = [
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "232448",
           "shared memory a block may use (the device's opt-in limit; "
           "default: sm_90's)">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::arith::ArithDialect", "mlir::nvgpu::NVGPUDialect",
                           "mlir::NVVM::NVVMDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCudaLowerReductions : Pass<"kiln-cuda-lower-reductions", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower gpu.all_reduce in kernels to shuffles and shared memory";
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::cf::ControlFlowDialect"];
}

def KilnCudaReductionOccupancy : Pass<"kiln-cuda-reduction-occupancy", "mlir::gpu::GPUModuleOp"> {
  let summary = "Ask ptxas for half occupancy in kernels that reduce across their block";
  let description = [{
    A kernel with a block-wide reduction (`gpu.all_reduce`: row kernels,
    split and arg reductions, scans) streams memory and needs resident
    threads to hide its latency. The driver's JIT gave such kernels 80 to
    96 registers (2 or 3 blocks of 256 threads per SM) where 64 sufficed,
    and they ran up to 1.3x slower (docs/cuda.md; a few fused ones spill
    some bytes under the cap and still run faster). Such
    a kernel of a known block size of at most 512 threads gets
    `nvvm.minctasm` for 1024 resident threads (PTX `.minnctapersm`): at
    most 64 registers. Kernels with f64 values keep their registers (a row
    of 32 f64 per thread alone takes 64).
  }];
}

def KilnCudaDataLayout : Pass<"kiln-cuda-data-layout", "mlir::gpu::GPUModuleOp"> {
  let summary = "Give kernel modules NVPTX's data layout before translation";
  let description = [{
    Sets `llvm.data_layout` on the gpu.module to NVPTX's 64-bit layout, so
    that LLVM IR translation aligns i64 loads and stores to 8 bytes (LLVM's
    default layout aligns i64 to 4, and NVPTX splits such accesses in two).
  }];
}

def KilnCudaTensorMapParams : Pass<"kiln-cuda-tensor-map-params", "mlir::gpu::GPUModuleOp"> {
  let summary = "Kernel parameters that TMA copies read become 128-byte grid constants";
  let description = [{
    A kernel's tensor map (CUtensorMap) is a parameter passed by value, which
    TMA (`cp.async.bulk.tensor`) reads through its
    generic address (CUDA's `const __grid_constant__ CUtensorMap`). After
    convert-gpu-to-nvvm such a parameter is an `!llvm.ptr`; this pass marks
    every kernel pointer parameter it takes as the map
    `llvm.byval = !llvm.array<128 x i8>`, `llvm.align = 64` and
    `nvvm.grid_constant`, so NVPTX declares `.param .align 64 .b8 [128]`.
    A pointer TMA reads that is also used otherwise is an error.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect"];
}

#endif
