//===- Passes.td - kiln lowering passes --------------------*- tablegen -*-===//
#ifndef KILN_LOWERING_PASSES_TD
#define KILN_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertKilnToLinalg : Pass<"kiln-convert-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower kiln ops to linalg, tensor and scf on signless tensors";
  let description = [{
    Elementwise ops become broadcasting linalg.generic ops with kiln's scalar
    semantics, reductions linalg reductions, movement ops index maps or tensor
    slices. Unsigned element types become signless; function signatures follow.
    Fails with a diagnostic on what the CPU kernels cannot express (dynamic
    shapes, f8 arithmetic).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnFormKernels : Pass<"kiln-form-kernels", "mlir::ModuleOp"> {
  let summary = "Fuse linalg ops into kernels and outline each kernel";
  let description = [{
    Fuses elementwise producers into their consumers (chains of elementwise
    and movement ops become one generic; reductions take their elementwise
    producers as prologue), then outlines every remaining compute op into a
    private `func.func` tagged `kiln.kernel`, called from the entry function.
    With `max-buffers`, a fusion that would make a kernel read and write
    more distinct tensors than that is not done: the chain is split into
    kernels a device can bind (Vulkan's maxPerStageDescriptorStorageBuffers).
  }];
  let options = [Option<"maxBuffers", "max-buffers", "unsigned", "0",
                        "most distinct tensors a fused kernel may read and "
                        "write (0: no limit)">];
  let dependentDialects = ["mlir::linalg::LinalgDialect",
                           "mlir::func::FuncDialect"];
}

def KilnExpandMath : Pass<"kiln-expand-math", "mlir::ModuleOp"> {
  let summary = "Replace f32 transcendental math ops with vectorisable polynomials";
  let description = [{
    f16/bf16 math runs in f32; f32 exp, log, tanh, erf, sin, cos, ... become
    polynomial approximations in arith ops that the vectoriser can widen. f64
    keeps libm calls for full precision.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnCpuTileMatmul : Pass<"kiln-cpu-tile-matmul", "mlir::ModuleOp"> {
  let summary = "Register-blocked, vectorised f32 matmul kernels on buffers";
  let description = [{
    Rewrites f32 linalg.matmul / linalg.batch_matmul on buffers into a
    parallel loop over blocks of C, each held in vector registers across the
    k loop (broadcast A, vector FMA with a row of B). Other element types keep
    the generic lowering.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t", "16",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">];
  let dependentDialects = ["mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::math::MathDialect"];
}

def KilnVectorize : Pass<"kiln-vectorize", "mlir::ModuleOp"> {
  let summary = "Vectorise elementwise and last-dim reduction kernels on buffers";
  let description = [{
    linalg.generic ops on buffers whose body is arith/math become a parallel
    loop over vector-wide chunks of the innermost loop (vector loads, splats of
    row values, the body on vectors, vector stores), plus a scalar tail.
    Reductions over the innermost loop keep a vector accumulator and reduce it
    horizontally at the end (float sums only when marked reassociable).
    Accesses carry the alignment the layout proves. CPU: the vector register
    width; CUDA: 4 lanes, 16 bytes a thread.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t", "16",
                        "lanes per vector">];
  let dependentDialects = ["mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnDistinctResults : Pass<"kiln-distinct-results", "mlir::ModuleOp"> {
  let summary = "Give each buffer a function returns a buffer of its own";
  let description = [{
    Run before buffer-results-to-out-params, which turns each returned
    buffer into an out-param and crashes on one returned twice
    (`return %0, %0`): further occurrences of a returned buffer return a
    copy of it.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnCopiesToLinalg : Pass<"kiln-copies-to-linalg", "mlir::ModuleOp"> {
  let summary = "Turn memref.copy into linalg.copy";
  let description = [{
    On GPUs every data movement must be a kernel; linalg.copy lowers to a
    parallel loop like any other linalg op.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnGpuMaterializeConstants : Pass<"kiln-gpu-materialize-constants", "mlir::ModuleOp"> {
  let summary = "Compute tensor constants on the device";
  let description = [{
    Run on GPU pipelines before bufferization, which would turn a tensor
    constant into a memref.get_global of host memory that no kernel can
    read and no GPU plan can name (a returned constant failed with "a value
    computed on the device is used on the host"). A splat becomes a
    linalg.fill; any other constant a tensor.from_elements of scalar
    constants, whose stores run as a one-thread kernel (at most 4096
    elements; a larger one is reported as not supported: pass it as an
    input).
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect",
                           "mlir::arith::ArithDialect"];
}

def KilnGpuMapLoops : Pass<"kiln-gpu-map-loops", "mlir::ModuleOp"> {
  let summary = "Tile top-level parallel loops into blocks and threads";
  let description = [{
    For convert-parallel-loops-to-gpu: every top-level scf.parallel is tiled
    with `block-size` on its innermost dim (threads) and 1 elsewhere (blocks),
    with bounds checks instead of min/max bounds; where a dim has more
    blocks than the grid allows, each block runs several rounds; serial
    top-level work
    (scf.for nests, rank-0 arithmetic) is wrapped in a one-iteration
    parallel loop, so that it runs on the device as one thread.
  }];
  let options = [Option<"blockSize", "block-size", "int64_t", "256",
                        "threads per block along the innermost dim">,
                 ListOption<"maxGrid", "max-grid", "int64_t",
                        "most blocks per grid dim x, y, z (default: CUDA's "
                        "2^31-1, 65535, 65535); a loop with more takes "
                        "several rounds per block">];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KilnGpuSinkViews : Pass<"kiln-gpu-sink-views", "mlir::ModuleOp"> {
  let summary = "Clone slices of buffers into the gpu.launch bodies that use them";
  let description = [{
    A kernel then takes each buffer once, however many slices of it it
    reads, which keeps it within the device's storage-buffer and
    kernel-parameter limits. Slices used only by loads, stores and further
    slices are sunk; fold-memref-alias-ops folds them away after outlining.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnGpuRowReductions : Pass<"kiln-gpu-row-reductions", "mlir::ModuleOp"> {
  let summary = "Reductions over the innermost loop as one block per row";
  let description = [{
    A linalg.generic on buffers that reduces its innermost loop with an
    associative 32-bit combiner becomes a gpu.launch of one block per row:
    threads stride over the row and gpu.all_reduce combines their partials.
  }];
  let options = [Option<"blockSize", "block-size", "int64_t", "256",
                        "threads per row">,
                 Option<"vectorWidth", "vector-width", "int64_t", "4",
                        "lanes of each thread's loads (16 bytes of f32); "
                        "0 or 1: scalar loads">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnGpuTileMatmul : Pass<"kiln-gpu-tile-matmul", "mlir::ModuleOp"> {
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
  }];
  let options = [
    Option<"tensorCores", "tensor-cores", "bool", "false",
           "f16/bf16 matmuls on mma.sync (sm_80+)">,
    Option<"tf32", "tf32", "bool", "false",
           "with tensor-cores: f32 matmuls too, inputs rounded to tf32">,
    Option<"mmaTileN", "mma-tile-n", "int64_t", "128",
           "output columns per block of the tensor-core kernel (64..256)">,
    Option<"mmaStages", "mma-stages", "int64_t", "2",
           "shared-memory buffers of the tensor-core kernel's K pipeline">,
    Option<"mmaStepBytes", "mma-step-bytes", "int64_t", "64",
           "bytes of A's rows per K step of the tensor-core kernel (64 or 128)">,
    Option<"maxSharedBytes", "max-shared-bytes", "int64_t", "49152",
           "shared memory a block may use (the device's opt-in limit)">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::vector::VectorDialect",
                           "mlir::math::MathDialect", "mlir::nvgpu::NVGPUDialect",
                           "mlir::NVVM::NVVMDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnGpuLowerReductions : Pass<"kiln-gpu-lower-reductions", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower gpu.all_reduce in kernels to shuffles and shared memory";
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::cf::ControlFlowDialect"];
}

def KilnSpirvPrepareKernels : Pass<"kiln-spirv-prepare-kernels", "mlir::gpu::GPUModuleOp"> {
  let summary = "Make outlined kernels convertible by convert-gpu-to-spirv";
  let description = [{
    Gives each kernel its `spirv.entry_point_abi` (workgroup size from
    `known_block_size`); rewrites gpu.all_reduce into gpu.subgroup_reduce
    (SPIR-V group operations, whatever the device's subgroup size) plus one
    partial per subgroup in workgroup memory; folds vector max/min
    reductions lane by lane (GLSL's are undefined on NaN); selects the
    inits of loops that run zero times (the SCF conversion leaves them
    undefined).
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
                           "mlir::spirv::SPIRVDialect"];
}

def KilnExpandF64Math : Pass<"kiln-expand-f64-math", "mlir::gpu::GPUModuleOp"> {
  let summary = "f64 exp, log, log1p, sin, cos, tanh, erf and pow in arithmetic";
  let description = [{
    SPIR-V's GLSL.std.450 has no 64-bit transcendental functions. This pass
    computes them from f64 arithmetic and bit operations (scalars or
    vectors): exp by Cody-Waite reduction and a degree-13 polynomial, log by
    exponent extraction and an atanh series, sin/cos by a three-part pi/2
    reduction and Taylor polynomials, erf by its all-positive series (no
    cancellation), tanh through expm1, log1p and pow from log and exp with
    the IEEE special cases. Accurate to a few ulp for the arguments kiln's
    tests use (|x| < 1e5 for sin/cos).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def KilnSpirvVectorBuffers : Pass<"kiln-spirv-vector-buffers", "mlir::spirv::ModuleOp"> {
  let summary = "Storage buffers of 16-byte vectors for kernels that access them so";
  let description = [{
    The memref conversion turns a vector load from a scalar buffer into a
    pointer bitcast, which logical addressing forbids. A StorageBuffer
    variable that is only accessed as whole, aligned vectors (`Aligned`
    memory access, which kiln-vectorize sets where it proves it) is retyped
    as an array of those vectors and indexed by index / lanes: one 16-byte
    access. A buffer with mixed accesses keeps its scalars and its vector
    accesses become one scalar access per lane.
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnSpirvNoContraction : Pass<"kiln-spirv-no-contraction", "mlir::spirv::ModuleOp"> {
  let summary = "Decorate float add, sub and mul NoContraction";
  let description = [{
    Without the decoration a Vulkan driver may fuse a multiply and an add
    into one fma (NVIDIA does), so the same kernel rounds differently from
    the CPU and CUDA. Every float add, sub and mul rounds on its own, as arith
    ops do on the other targets (docs/precision.md).
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnExactF32Division : Pass<"kiln-exact-f32-division", "mlir::gpu::GPUModuleOp"> {
  let summary = "Correctly rounded f32 division from integer operations";
  let description = [{
    Vulkan allows f32 division 2.5 ulp of error (NVIDIA's driver uses it:
    round(x / scale) of a quantisation was off by one), while kiln promises
    IEEE division on every target (docs/precision.md). Each f32 arith.divf
    (scalar or vector) becomes a 64-bit integer division of the significands
    with one round-to-nearest-even step, subnormals, infinities and NaN
    handled, which every device evaluates exactly. Needs shaderInt64.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect"];
}

def KilnSpirvPreserveNan : Pass<"kiln-spirv-preserve-nan", "mlir::spirv::ModuleOp"> {
  let summary = "Declare SignedZeroInfNanPreserve on every entry point";
  let description = [{
    Without this execution mode (SPV_KHR_float_controls) a Vulkan driver may
    assume floats are never NaN or infinite (NVIDIA folds a NaN-correct
    `select(x < 0, 0, x)` into a max that drops NaN). Declared for each
    float width in `widths` (what the device supports); run before
    spirv-update-vce, which then requires the capability and extension.
  }];
  let options = [ListOption<"widths", "widths", "int32_t",
                            "float bit widths to preserve (16, 32, 64)">];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnCpuFlattenParallelLoops : Pass<"kiln-cpu-flatten-parallel-loops", "mlir::ModuleOp"> {
  let summary = "Leave one level of one-dim scf.parallel loops to split across threads";
  let description = [{
    Run before async-parallel-for, which splits every scf.parallel without
    reductions into blocks run by a thread pool, nested ones too. Two LLVM
    22 defects follow:
    - it splits a multi-dim loop whose inner dims have few static
      iterations into blocks aligned to them, but counts the blocks before
      aligning, so an extra block can wrap around and redo the first rows
      concurrently (a race where the body accumulates: a matmul into C, a
      reduction over a middle dim into its output). Each such loop is
      collapsed into one dim over the product of its dims, which has no
      inner dims to align to.
    - a loop nested in a split loop waits for its blocks with a blocking
      wait on a pool thread; once every pool thread waits so, nothing runs
      the blocks (a hang, e.g. a sum over dim 1 of 4096x2x4x257). Of
      nested loops, one level therefore stays parallel: the outer one when
      it has at least as many iterations as each loop nested in it (those
      run serially, as scf.for), else the outer one runs serially and the
      choice repeats one level down.
    Loops with reductions, which async-parallel-for leaves serial, are left
    alone.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KilnCpuEntry : Pass<"kiln-cpu-entry", "mlir::ModuleOp"> {
  let summary = "Add the packed-argument entry point `_kiln_entry` (LLVM dialect)";
  let description = [{
    After lowering to the LLVM dialect with bare-pointer memrefs, adds
    `void _kiln_entry(ptr args)` that loads one buffer pointer per argument of
    the entry function (inputs, then outputs) and calls it. The runtime calls
    every CPU program through this one signature.
  }];
  let options = [Option<"entry", "entry", "std::string", "\"main\"",
                        "the entry function">];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif
