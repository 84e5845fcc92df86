//===- Passes.td - kiln lowering: passes both GPU targets run ---*- tablegen -*-===//
#ifndef KILN_LOWERING_GPU_PASSES_TD
#define KILN_LOWERING_GPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    with bounds checks instead of min/max bounds; dims past the third merge
    into it (static sizes) while the grid has fewer than 1024 blocks, the
    rest running in each thread; where a dim has more
    blocks than the grid allows, each block runs several rounds; serial
    top-level work
    (scf.for nests, rank-0 arithmetic) is wrapped in a one-iteration
    parallel loop, so that it runs on the device as one thread.
  }];
  let options = [Option<"blockSize", "block-size", "int64_t",
                        "kiln::GpuMapLoopsTunables{}.blockSize",
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

def KilnGpuKernelSizes : Pass<"kiln-gpu-kernel-sizes", "mlir::ModuleOp"> {
  let summary = "Pass a kernel's run-time sizes as scalar parameters after its buffers";
  let description = [{
    For programs with `?` dims, after outlining. A kernel parameter of a
    dynamically shaped buffer (identity layout) becomes a flat buffer of its
    element type, and its `?` dims scalar parameters: loads and stores are
    linearised with strides computed from them, memref.dim reads them. The
    launches pass `memref.dim` of their operands, which the GPU plan
    evaluates at run time. Every kernel's parameters are then its buffers
    first, then its scalars (the host's sizes), in that order: Vulkan binds
    buffer i to binding i and pushes the scalars as push constants.
    `flat-size`: the flat buffers' static length (CUDA: bare pointers need
    a static type; the length is never read), or 0 for `?` (SPIR-V: a
    runtime array).
  }];
  let options = [Option<"flatSize", "flat-size", "int64_t", "0",
                        "static length of the flat buffers; 0: dynamic">];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect"];
}

def KilnGpuScans : Pass<"kiln-gpu-scans", "mlir::ModuleOp"> {
  let summary = "Scans (cumsum loop nests) across the GPU";
  let description = [{
    A top-level loop nest that scans one buffer into another along one dim
    (kiln.cumsum's lowering) becomes, for rows longer than 32 elements of a
    32- or 64-bit sum, a blocked scan: chunk totals, a scan of the totals
    per row, then each chunk's scan plus its offset, all gpu.launch ops of
    256 threads; shorter rows run one thread per row.
  }];
  let options = [Option<"maxGridX", "max-grid-x", "int64_t", "2147483647",
                        "most blocks along x; past it a block takes several chunks">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def KilnGpuArgReductions : Pass<"kiln-gpu-arg-reductions", "mlir::ModuleOp"> {
  let summary = "argmax/argmin as one block per row, long rows split across blocks";
  let description = [{
    A linalg.generic on buffers that reduces one loop into a best value and
    its index (kiln.argmax and kiln.argmin's lowering) becomes gpu.launch
    ops of 256-thread blocks: threads stride over a row keeping a
    (value, index) partial, and a tree in workgroup memory combines them,
    the lower index winning ties. Fewer than 128 rows of 32768 elements or
    more are cut into slices, one block each, and a second launch combines
    the slices' partials. Rows shorter than 32 elements, and rows shorter
    than 256 or not contiguous when there are 4096 or more of them, keep a
    thread per row.
  }];
  let options = [Option<"maxGridX", "max-grid-x", "int64_t", "2147483647",
                        "most blocks along x; past it a block takes several rows">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

def KilnGpuScatterAdds : Pass<"kiln-gpu-scatter-adds", "mlir::ModuleOp"> {
  let summary = "Scatter-add loop nests across the GPU";
  let description = [{
    A top-level loop nest whose innermost body reads and writes one buffer
    only at the element it stores (kiln.scatter_add's lowering) runs in
    parallel: with every loop parallel and the load-add-store as one
    memref.atomic_rmw where the stored type is in `atomic-types` and some
    loop's iv does not index the store directly; else with the loops whose
    iv indexes the store directly parallel around the others, which keep
    their order (the serial result, deterministic). Where that leaves no
    parallel loop or long serial loops, an f16/bf16 or i8/i16 output whose
    wider type is in `atomic-types` is summed atomically in a widened
    temporary and rounded back once.
  }];
  let options = [ListOption<"atomicTypes", "atomic-types", "std::string",
                            "element types the target adds atomically in global memory "
                            "(f32, f64, i32, i64)">];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::linalg::LinalgDialect"];
}

def KilnGpuColumnChains : Pass<"kiln-gpu-column-chains", "mlir::ModuleOp"> {
  let summary = "Chains reduced over an outer dim (softmax over dim 0) as one loop, a column per thread";
  let description = [{
    A softmax over dim 0 or over an NCHW image's channels reaches the GPU
    as a chain of reductions over that dim and elementwise ops reading
    them (kiln::ReductionChain): four kernels, each a pass over the tensor,
    the exponentials written to a temporary as large as it and read back
    twice. Where the reduced dim is at most 64 long (so that
    kiln-gpu-normalize-reductions gives each reduction a thread per output,
    serially, loads coalesced across threads), this pass runs the whole
    chain so: one scf.parallel over the columns (every loop but the
    reduced one), each column running the stages in turn as serial loops
    over the reduced dim, unrolled by 4. A column's statistics stay in
    registers; a temporary whose last reader writes the output
    elementwise lives in the output (the exponentials); later stages read
    the column again from the cache. Static sizes only.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnGpuNormalizeReductions
    : Pass<"kiln-gpu-normalize-reductions", "mlir::ModuleOp"> {
  let summary = "Give each reduction a mapping where no thread reduces a long run alone";
  let description = [{
    The GPU reduction passes take a reduction over the innermost loop. One
    over several loops (a sum over all dims of a matrix, a mean over H and
    W, batch-norm statistics over dims 0, 2, 3) or over an outer loop (a
    column sum, a channel mean) fell to the generic mapping, which
    parallelises only the loops outside the first reduced one: one thread
    for a full reduction (16M elements serially for a 4096^2 sum on CUDA);
    lavapipe ends an invocation's loops after 65535 iterations, silently,
    so a 300x300 sum came out 65101. Now adjacent reduction loops that
    every operand indexes contiguously, over buffers whose layout lets
    them collapse, become one loop over collapsed views. A reduction whose
    inputs are contiguous along an output dim runs a thread per output
    (scf.parallel over the outputs, the reduction serial inside: coalesced)
    where it has at least 16384 outputs or at most 64 elements each, and at
    most 4096. Otherwise the parallel loops move outside the reduced ones,
    so that the row passes give each output a block; a reduction still over
    several loops then reduces its innermost one into a temporary (filled
    with the combiner's identity) and the temporary over the others.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::memref::MemRefDialect"];
}

def KilnGpuSplitReductions : Pass<"kiln-gpu-split-reductions", "mlir::ModuleOp"> {
  let summary = "Split reductions of few long rows across blocks";
  let description = [{
    A row reduction (kiln-gpu-row-reductions) runs one block per row, so a
    full reduction or one of a few long rows would run on one or a few of
    the GPU's SMs. Such a reduction becomes three: each row's first
    `slices x length` elements reduce into per-slice partials, one block
    per slice; the partials reduce into the output; the row's tail (fewer
    than `length` elements) is added to it. kiln-gpu-row-reductions runs
    the first as one kernel and the other two as one more. A reduction of
    few rows of run-time length becomes two gpu.launch ops of 256-thread
    blocks instead: slices into partials, partials into the output, the
    slices' count and length computed on the host. The order of
    operations is fixed, so a result is the same on every run.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::memref::MemRefDialect",
                           "mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::vector::VectorDialect"];
}

def KilnGpuRowReductions : Pass<"kiln-gpu-row-reductions", "mlir::ModuleOp"> {
  let summary = "Reductions over the innermost loop as one block per row";
  let description = [{
    A linalg.generic on buffers that reduces its innermost loop with an
    associative 32-bit combiner becomes a gpu.launch of one block per row:
    threads stride over the row and gpu.all_reduce combines their partials.
  }];
  let options = [Option<"blockSize", "block-size", "int64_t",
                        "kiln::GpuRowReductionTunables{}.blockSize", "threads per row">,
                 Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::GpuRowReductionTunables{}.vectorWidth",
                        "lanes of each thread's loads (16 bytes of f32); "
                        "0 or 1: scalar loads">,
                 Option<"hoistRowValues", "hoist-row-values", "bool", "false",
                        "load and compute what depends only on the row once, "
                        "before the loop over the row (SPIR-V, where an exact "
                        "f32 division costs ~40 integer ops; on CUDA it "
                        "measured 16% slower on softmax, docs/vulkan.md)">,
                 Option<"runTimeSizes", "run-time-sizes", "bool", "false",
                        "a kernel over rows of run-time length comes in "
                        "variants the host picks by the run's row length: "
                        "vector accesses where it is a multiple of the lanes "
                        "(unmasked where it fills every thread's chunks), else "
                        "scalar; CUDA: SPIR-V's runtime arrays cannot be "
                        "retyped">,
                 Option<"maxGridX", "max-grid-x", "int64_t", "2147483647",
                        "most blocks along x; past it (or, below 2^31-1, for a "
                        "run-time row count) each block loops over rows. Only "
                        "for an all-reduce lowering that may sit in an scf.for "
                        "and ends in a barrier (SPIR-V's; upstream's, used on "
                        "CUDA, branches and reads its buffer after the last "
                        "barrier)">];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::affine::AffineDialect",
                           "mlir::vector::VectorDialect"];
}

#endif
