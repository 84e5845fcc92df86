//===- Passes.td - kiln lowering: passes of the SPIR-V (Vulkan) target ---*- tablegen -*-===//
#ifndef KILN_LOWERING_SPIRV_PASSES_TD
#define KILN_LOWERING_SPIRV_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnSpirvPrepareKernels : Pass<"kiln-spirv-prepare-kernels", "mlir::gpu::GPUModuleOp"> {
  let summary = "Make outlined kernels convertible by kiln-spirv-convert-kernels";
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

def KilnSpirvTileMatmul : Pass<"kiln-spirv-tile-matmul", "mlir::ModuleOp"> {
  let summary = "f16 matmuls on cooperative matrices (VK_KHR_cooperative_matrix)";
  let description = [{
    Replaces each static f16 x f16 -> f32 linalg.matmul / batch_matmul
    whose K and N are multiples of 4 by a gpu.launch on subgroup MMA ops
    (gpu.subgroup_mma_*, which kiln-spirv-convert-kernels turns into
    spirv.KHR.CooperativeMatrix*), tiled as VulkanCoopMatmulTunables says
    (untuned: the device's first fitting candidate, 128 x 128 tiles for
    outputs of fewer than 128 such workgroups; or the tuned one; default: a
    workgroup of 2 x 8 subgroups owns a 128 x 256 tile of C, each subgroup
    64 x 32 of it as accumulators of the device's `mma-shape`; K advances
    16 at a time through two workgroup-memory stages of vectors of 4 f16,
    each invocation's 8-byte global loads issued 4 steps ahead). Each
    accumulator goes through a per-subgroup scratch tile to the elementwise
    epilogue (bias, activation) and C, inside the matrix only. Without
    `mma-shape`, nothing changes (kiln-spirv-simt-matmul takes the f16
    matmuls).
  }];
  let options = [
    ListOption<"mmaShape", "mma-shape", "int64_t",
               "M, N, K of the device's f16 x f16 -> f32 cooperative matrix">,
    Option<"subgroupSize", "subgroup-size", "int64_t", "32",
           "invocations per subgroup on the device">,
    Option<"maxWorkgroupBytes", "max-workgroup-bytes", "int64_t", "49152",
           "workgroup memory a workgroup may have (maxComputeSharedMemorySize)">,
    Option<"maxInvocations", "max-invocations", "int64_t", "1024",
           "invocations a workgroup may have (maxComputeWorkGroupInvocations)">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
                           "mlir::spirv::SPIRVDialect", "mlir::vector::VectorDialect"];
}

def KilnSpirvSimtMatmul : Pass<"kiln-spirv-simt-matmul", "mlir::ModuleOp"> {
  let summary = "f32-accumulating matmuls on the SIMT kernel both GPU targets build";
  let description = [{
    Replaces each linalg.matmul / batch_matmul of f32, f16 or bf16 inputs
    into f32 that kiln-spirv-tile-matmul left (no cooperative matrices, or
    not f16) by the SIMT kernel of GPU/SimtMatmul.h, as CUDA's SIMT path
    builds it: a workgroup per tile x tile block of C, K through two
    workgroup-memory stages, each invocation perThread x perThread outputs
    in registers, the elementwise epilogue fused, tiled as
    GpuSimtMatmulTunables says (tune space gpu.matmul.simt; untuned: as on
    CUDA where `fill-blocks` gives the multiprocessors, else the default
    128 x 128 tiles; the first candidate within the workgroup limits where
    that one is not). Workgroup memory is accessed lane by lane (logical addressing
    has no vector pointer casts into it). Where `max-thread-iterations`
    bounds the loop iterations of an invocation (llvmpipe), only matmuls
    whose static K keeps the kernel's K loop within it are taken; the
    others stay loop nests, which split K. So do static matmuls whose
    workgroups (on the smallest tiles, K split the most) could pass
    `max-grid`: the loop nests cap their grids. A run-time size past it
    (more than about 8 million rows) is refused at launch, saying so.
  }];
  let options = [
    Option<"maxWorkgroupBytes", "max-workgroup-bytes", "int64_t", "49152",
           "workgroup memory a workgroup may have (maxComputeSharedMemorySize)">,
    Option<"maxInvocations", "max-invocations", "int64_t", "1024",
           "invocations a workgroup may have (maxComputeWorkGroupInvocations)">,
    Option<"maxThreadIterations", "max-thread-iterations", "int64_t", "0",
           "loop iterations an invocation may run; 0: no bound">,
    ListOption<"maxGrid", "max-grid", "int64_t",
               "maxComputeWorkGroupCount (x, y, z); default: Vulkan's guaranteed 65535">,
    Option<"fillBlocks", "fill-blocks", "int64_t", "0",
           "the device's multiprocessors, which untuned tilings fill (narrower "
           "tiles, K split) as on CUDA; 0: unknown, the default tiling">,
  ];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnSpirvExpandF64Math : Pass<"kiln-spirv-expand-f64-math", "mlir::gpu::GPUModuleOp"> {
  let summary = "f64 exp, log, log1p, sin, cos, tanh, erf and pow in arithmetic";
  let description = [{
    SPIR-V's GLSL.std.450 has no 64-bit transcendental functions. This pass
    computes them from f64 arithmetic and bit operations (scalars or
    vectors): exp by Cody-Waite reduction and a degree-13 polynomial, log by
    exponent extraction and an atanh series, sin/cos by a three-part pi/2
    reduction and Taylor polynomials, erf by fdlibm's rational
    approximations (no loop), tanh through expm1, log1p and pow from log and exp with
    the IEEE special cases. Accurate to a few ulp for the arguments kiln's
    tests use (|x| < 1e5 for sin/cos).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnSpirvBf16AsI16 : Pass<"kiln-spirv-bf16-as-i16", "mlir::gpu::GPUModuleOp"> {
  let summary = "bf16 kernels as 16-bit integer bits around f32 arithmetic";
  let description = [{
    SPIR-V for Vulkan has no bf16 type; MLIR's SPIR-V type converter stores
    bf16 as i16 but cannot convert what computes on it. kiln computes bf16 in
    f32 and rounds once (docs/precision.md), so a kernel's bf16 values are
    loads, stores, constants and the extf/truncf to and from f32 around f32
    arithmetic (casts meet f64 and wide ints through f32: kiln's castScalar).
    This pass moves any arith op still on bf16 to f32 and expands each extf
    and truncf between bf16 and f32 into integer operations on the bits
    (truncf rounds to nearest even, NaN stays NaN), leaving only bitcasts
    between bf16 and i16: kiln-spirv-convert-kernels renames bf16 i16.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnSpirvF16RoundTrips : Pass<"kiln-spirv-f16-round-trips", "mlir::gpu::GPUModuleOp"> {
  let summary = "f32 -> f16 -> f32 round trips rounded in integer operations";
  let description = [{
    NVIDIA's Vulkan driver drops an OpFConvert f32 -> f16 followed by one
    back to f32 (seen on the H100: a cast of 2049 to f16 and back gave
    2049, of 65520 gave 65520, not inf), so a value that is rounded to f16
    and widened again in registers (a cast's result read by the next op,
    f16 arithmetic between ops) was not rounded. Each arith.extf whose
    operand is an arith.truncf from f32 to f16 (scalar or vector) becomes
    the f32 of that f16 computed from the f32's bits: 13 bits dropped to
    nearest even, f16 subnormals as multiples of 2^-24, overflow to inf,
    NaN and infinities kept. The truncf stays for any other use (stores).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
}

def KilnSpirvExactF32Division : Pass<"kiln-spirv-exact-f32-division", "mlir::gpu::GPUModuleOp"> {
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

def KilnSpirvConvertKernels : Pass<"kiln-spirv-convert-kernels", "mlir::ModuleOp"> {
  let summary = "Outlined kernels to spirv.modules, float atomic adds included";
  let description = [{
    Converts a copy of each gpu.module, placed before it, to a spirv.module
    as upstream convert-gpu-to-spirv does for Vulkan (memory spaces to
    storage classes, then the GPU, SCF, arith, memref, func and vector
    patterns under the module's target env), and memref.atomic_rmw addf to
    spirv.EXT.AtomicFAdd, which the target env must allow
    (AtomicFloat32AddEXT / AtomicFloat64AddEXT).
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
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
    accesses become one scalar access per lane. Buffers of run-time sizes
    (runtime arrays) are treated alike.
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnSpirvPushConstants : Pass<"kiln-spirv-push-constants", "mlir::spirv::ModuleOp"> {
  let summary = "Pass a kernel's scalar parameters as one push-constant block";
  let description = [{
    Run after spirv-lower-abi-attrs, which gives each scalar parameter its
    own storage buffer. Vulkan allows one push-constant block per entry
    point: the scalars (the run-time sizes kiln-gpu-kernel-sizes put after
    the buffers) become its members, in parameter order, each at the next
    offset aligned to its size; their bindings go away, so buffer i stays
    at binding i. The runtime pushes the same layout at each launch.
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

def KilnSpirvFloatControls : Pass<"kiln-spirv-float-controls", "mlir::spirv::ModuleOp"> {
  let summary = "Declare SignedZeroInfNanPreserve and DenormPreserve on every entry point";
  let description = [{
    Execution modes of SPV_KHR_float_controls, per float width the device
    supports them for; run before spirv-update-vce, which then requires
    their capabilities and the extension.
    - SignedZeroInfNanPreserve (`nan-widths`): without it a Vulkan driver
      may assume floats are never NaN or infinite (NVIDIA folds a
      NaN-correct `select(x < 0, 0, x)` into a max that drops NaN).
    - DenormPreserve (`denorm-widths`): without it a driver may flush
      subnormals (NVIDIA flushes f32 ones: a bf16 add, computed in f32,
      gave 0 for 2^-127, and an f64 -> bf16 cast rounded 2^-134 up, its
      f32 widened back to f64 as 0), where the CPU, CUDA and torch keep
      them.
  }];
  let options = [ListOption<"nanWidths", "nan-widths", "int32_t",
                            "float bit widths whose NaN, inf and signed zero to preserve">,
                 ListOption<"denormWidths", "denorm-widths", "int32_t",
                            "float bit widths whose subnormals to preserve"> ];
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

def KilnSpirvInt64Atomics : Pass<"kiln-spirv-int64-atomics", "mlir::spirv::ModuleOp"> {
  let summary = "Declare Int64Atomics where a module has 64-bit integer atomics";
  let description = [{
    OpAtomicIAdd on an i64 (scatter_add on a device with
    shaderBufferInt64Atomics) needs the Int64Atomics capability, which
    spirv-update-vce does not deduce; runs after it and adds the capability
    to the module's version-capability-extension triple.
  }];
  let dependentDialects = ["mlir::spirv::SPIRVDialect"];
}

#endif
