//===- Passes.td - kiln lowering: passes every target runs ---*- tablegen -*-===//
#ifndef KILN_LOWERING_COMMON_PASSES_TD
#define KILN_LOWERING_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

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

def KilnCopiesToLinalg : Pass<"kiln-copies-to-linalg", "mlir::ModuleOp"> {
  let summary = "Turn memref.copy into a linalg op";
  let description = [{
    Every copy (a pad's interior, a concat's parts, a strided slice, an
    output that is an input) becomes a linalg op, which lowers to a
    parallel loop like any other: on GPUs every data movement must be a
    kernel. With `generic`, a linalg.generic that kiln-vectorize takes (the
    CPU: memref.copy of a strided view was MLIR's runtime memrefCopy, one
    element at a time on one thread).
  }];
  let options = [Option<"generic", "generic", "bool", "false",
                        "emit linalg.generic instead of linalg.copy">];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnVectorize : Pass<"kiln-vectorize", "mlir::ModuleOp"> {
  let summary = "Vectorise elementwise and last-dim reduction kernels on buffers";
  let description = [{
    linalg.generic ops on buffers whose body is arith/math become a parallel
    loop over vector-wide chunks of the innermost loop (vector loads, splats of
    row values, the body on vectors, vector stores), plus a scalar tail.
    Reductions over the innermost loop keep vector accumulators (one, or
    `accumulators` independent ones over interleaved vectors) and reduce
    them horizontally at the end (float sums only when marked reassociable).
    Accesses carry the alignment the layout proves. CPU: the vector register
    width; CUDA: 4 lanes, 16 bytes a thread. With run-time-sizes, loops of
    run-time size are vectorised too (the vector loop's end and the tail
    computed at run time). With outer-reductions, a reduction over outer
    loops of an innermost parallel loop (a sum over dim 0) becomes a
    parallel loop over vectors of that innermost loop (`accumulators` of
    them a step where the loop is static and long enough), each carried
    through the reduction loops in their order (any body: each lane sees
    the scalar loops' order). With `threads` too, such a reduction over
    at least 64 static rows runs as a parallel loop over blocks of columns
    (up to 8 KiB of a row, as many as the threads at least), each block
    taking every row in order into its part of the output. With
    short-tails, a static tail is one shorter vector in the vector loop
    (elementwise kernels, outer reductions carried in registers). An input
    read backwards along the innermost loop (a flip) is a vector load
    reversed by a shuffle; with window-reads, one read at an offset from
    it (a window's tap) an unaligned vector load, and one read at a small
    stride (a strided window) a load of stride times the lanes, shuffled.
    With gather-reads, a body's load whose innermost index varies with the
    data (a gather along the last dim) is a vector.gather.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "lanes per vector">,
                 Option<"runTimeSizes", "run-time-sizes", "bool", "false",
                        "vectorise loops of run-time size (`?` dims) too">,
                 Option<"accumulators", "accumulators", "int64_t", "1",
                        "vector accumulators of a row reduction, each over every "
                        "that-many-th vector (independent chains of combines); "
                        "vectors an outer reduction carries a step">,
                 Option<"outerReductions", "outer-reductions", "bool", "false",
                        "vectorise reductions over outer loops of an innermost "
                        "parallel loop too">,
                 Option<"threads", "threads", "int64_t", "0",
                        "threads the parallel loops run on; with outer-reductions "
                        "and more than 0, an outer reduction over many rows "
                        "runs in blocks of columns, at least that many where "
                        "the columns allow">,
                 Option<"shortTails", "short-tails", "bool", "false",
                        "an elementwise kernel's static tail (a row's last "
                        "size % width iterations) as one shorter vector in the "
                        "vector loop, instead of a scalar loop of its own (the "
                        "CPU: LLVM splits any length into legal accesses)">,
                 Option<"windowReads", "window-reads", "bool", "false",
                        "an input read at the innermost loop's index plus an "
                        "offset free of it (a window's tap, `ow + kw`) as an "
                        "unaligned vector load, and one read at a stride of "
                        "up to 4 (`2 * ow + kw`) as a wider load and a "
                        "shuffle (the CPU)">,
                 Option<"gatherReads", "gather-reads", "bool", "false",
                        "a body's load whose innermost index is a value that "
                        "varies along the innermost loop (a gather along the "
                        "last dim) as a vector.gather (the CPU: AVX-512's "
                        "gathers)">];
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

def KilnAttentionToLoops : Pass<"kiln-attention-to-loops", "mlir::ModuleOp"> {
  let summary = "Fused attention on buffers as a parallel loop over query rows";
  let description = [{
    Replaces each kiln_kernel.attention on buffers that no target kernel
    took by an scf.parallel over (batch, query row): online softmax over the
    keys one at a time (running max m and sum l in registers, the row's f32
    sums in the op's acc buffer, rescaled only when the max grows), then
    out = acc / l. No score is stored. CPU and the generic GPU kernel.
    With `lanes` > 1 the head-dim loops (the q.k dot product, the sums'
    updates) move that many elements a step as vectors, where the head dims
    are multiples of it (the CPU; SPIR-V's runtime arrays take no vectors).
    With `max-thread-iterations` > 0 (Vulkan: lavapipe ends an invocation's
    loops after 65535 iterations, silently) and static head dims, a row's
    keys run in chunks that keep a thread within it, a thread per row and
    chunk into partial sums, maxima and totals, then a thread per output
    element combines its row's chunks.
  }];
  let options = [
    Option<"lanes", "lanes", "int64_t", /*default=*/"1",
           "Elements per step of the head-dim loops (1: scalar)">,
    Option<"maxThreadIterations", "max-thread-iterations", "int64_t", /*default=*/"0",
           "Loop iterations one thread may run (0: no bound); longer rows of "
           "keys run in chunks">,
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect", "mlir::math::MathDialect",
                           "mlir::vector::VectorDialect"];
}

def KilnReshapedResults : Pass<"kiln-reshaped-results", "mlir::ModuleOp"> {
  let summary = "Write results that are reshapes of a local buffer in place";
  let description = [{
    Run after buffer-results-to-out-params. A result that was a reshape
    view of a buffer the function allocates (conv2d's NCHW view of its
    [N, O, OH*OW] product) is copied into its out-param; the buffer becomes
    the inverse reshape of the out-param instead, so whatever wrote it
    writes the result, and the copy goes.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

#endif
