//===- Passes.td - kiln lowering: passes of the CPU target ---*- tablegen -*-===//
#ifndef KILN_LOWERING_CPU_PASSES_TD
#define KILN_LOWERING_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCpuTileMatmul : Pass<"kiln-cpu-tile-matmul", "mlir::ModuleOp"> {
  let summary = "Packed, cache-blocked, register-blocked f32 matmul kernels on buffers";
  let description = [{
    Rewrites f32 linalg.matmul / linalg.batch_matmul on buffers into one
    parallel loop of tasks over every batch's blocks of C: row groups times
    column blocks, chosen for static sizes by a model of packing and
    balance over `threads` (run-time sizes: `threads` row groups per
    column block). Each task packs k-slices of its panels of A and B
    into contiguous buffers sized for the caches and runs a micro-kernel
    that holds a tile of C in vector registers across the slice (broadcast
    A, vector FMA with a row of B). Block sizes come from the cpu.matmul
    tune space (kiln/Lowering/CPU/MatmulTunables.h). Other element types
    keep the generic lowering.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">,
                 Option<"threads", "threads", "int64_t", "2",
                        "threads the kernel's parallel loop runs on">];
  let dependentDialects = ["mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::math::MathDialect"];
}

def KilnCpuAttentionBlocks : Pass<"kiln-cpu-attention-blocks", "mlir::ModuleOp"> {
  let summary = "Fused attention on the host CPU in blocks of query rows and vectors of keys";
  let description = [{
    Replaces each kiln_kernel.attention on buffers with f32 sums (f32, f16
    or bf16 inputs) whose V head dim is a static multiple of the vector
    width and contiguous (as out and acc are) by:
    - a parallel loop packing K transposed, f32, its keys rounded up to a
      block's (zeros past the last);
    - an scf.parallel over (batch, blocks of query rows), each block
      marked `kiln.min_task_size` 1. A block's keys run a few vectors at a
      time (the tunables `cpu.attention`, CpuAttentionTunables: by default
      8 rows x 3 vectors with AVX-512's 32 registers, 4 x 3 with AVX2's
      16): each row's scores are vectors along the keys (a step of the
      head dim loads a vector of packed K each and broadcasts q), scaled,
      masked (causal, a mask, keys past the last) and folded into the row's
      running max and total (one max and one sum across lanes); the
      probabilities (rounded to the inputs' type) go to a per-block
      scratch, and each vector of the rows' sums in acc is reloaded times
      the rescale factor and updated by a V vector per key with the
      probability broadcast. Then out = acc / total.
    With `bf16-dot-products` (the host has AVX512-BF16) and 16 lanes, bf16
    inputs with an even static head dim multiply as pairs
    (x86vector.avx512.dot, vdpbf16ps): K is packed as bf16 pairs of the head
    dim, V as bf16 pairs of keys (a second packing loop), the probabilities
    are parked as bf16, q and them broadcast a 32-bit pair at a time, and
    every span of keys runs whole (p is 0 past the last key, packed V zeros).
    The last rows of a batch that do not fill a block run one at a time.
    Fewer query rows than a block (a decode step) run a task per row
    reading K and V where they stand (CpuAttentionRows.cpp), where both head
    dims are static multiples of the vector width and every operand is
    contiguous along them: per span of 2 vectors of keys, each vector's
    scores as FMAs along the head dim into an accumulator per key, summed
    across lanes together by a tree of shuffles; the online softmax on those
    vectors; the sums updated by a V row per key in two sets of
    accumulators. A run-time row count chooses between blocks and rows at
    run time. Other attention ops (f64, odd head dims) are left to
    kiln-attention-to-loops.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">,
                 Option<"bf16DotProducts", "bf16-dot-products", "bool", "false",
                        "bf16 inputs' products as AVX512-BF16 dot products of pairs "
                        "(x86vector.avx512.dot) with 16 lanes">];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::x86vector::X86VectorDialect"];
}

def KilnCpuArgReductions : Pass<"kiln-cpu-arg-reductions", "mlir::ModuleOp"> {
  let summary = "argmax/argmin as parallel rows, each a loop carrying its best in registers";
  let description = [{
    A linalg.generic on buffers that reduces one loop into a best value and
    its index (kiln.argmax and kiln.argmin's lowering) becomes an
    scf.parallel over its other loops whose body is one scf.for over the
    reduced loop with the best value and index as iter_args, loaded from
    the outputs before (their fills) and stored after.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

def KilnCpuRowKernels : Pass<"kiln-cpu-row-kernels", "mlir::ModuleOp"> {
  let summary = "Chains of reductions and row-wise ops as one parallel loop over rows";
  let description = [{
    A run of linalg.generic ops on buffers in one block over the same loops,
    each a reduction over one loop (the row loop) that kiln-vectorize takes
    or an elementwise op, with the fills of what they write and only pure
    ops, allocations and deallocations between them, becomes an
    scf.parallel (carrying `kiln.min_task_size` 1; dims of one are no loop
    dims) that runs every stage on one row after the other, as linalg ops
    on rank-reduced subviews of the row. Where the row loop is the
    innermost (a row chain: softmax over the last dim, the norms), the
    parallel loop runs over the loops outside it. Where parallel loops lie
    inside it (a column chain: softmax over dim 0 or over an NCHW image's
    channels), it runs over the other loops and slabs of the innermost
    loop's columns, a row being the slab: every iteration of the row loop
    times a block of columns, as wide as about 128 KiB of each buffer's
    slab allows, in whole cache lines from 256 bytes to 8 KiB a row, narrower
    where that gives each thread a slab, the last one narrower where they do
    not divide the columns; a row loop of run-time size, or one so long that
    a slab of 256-byte rows would pass 256 KiB, keeps the stages as they are.
    Every buffer the chain writes must be accessed by it row by row (indexed
    by the loops in order, with or without the row loop), and every buffer
    it touches must be one of its own (an allocation, a global or a function
    argument, or a view of one). A temporary that only the chain uses, with
    a static row, becomes one row: the row of the output that the last stage
    reading it writes, where that stage is elementwise, reads it as it
    writes the output and nothing before it touches the output (the stage
    then updates the output in place); else on the stack (memref.alloca
    between llvm.intr.stacksave and stackrestore) up to 64 KiB of them,
    else allocated and freed in the loop. A softmax or layer_norm thus
    reads its input from memory once and writes its output once. Fewer static rows
    than `threads` stay as they are, so that the elementwise stages still
    use every thread; a run-time number of rows takes the loop behind an
    scf.if on that number, whose else branch keeps the stages as they were.
  }];
  let options = [Option<"threads", "threads", "int64_t", "2",
                        "threads the kernels' parallel loops run on">];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect", "mlir::LLVM::LLVMDialect"];
}

def KilnCpuTransposeBlocks : Pass<"kiln-cpu-transpose-blocks", "mlir::ModuleOp"> {
  let summary = "Elementwise kernels that read an operand transposed, in square blocks of vectors";
  let description = [{
    A linalg.generic on buffers with parallel loops only, an identity
    output map and an arith/math body, where inputs read along another loop
    K in their innermost dim than the output's innermost loop L (a
    kiln.transpose or permute, an op on a transposed view), becomes an
    scf.parallel over blocks of two V x V squares of K and L (V the output
    element's lanes in a vector register, at most 16; one square where K
    is static and shorter than 2V). A square loads V vectors of each such
    input along K, transposes them in registers with a butterfly of
    vector.shuffle (log2 V rounds of V shuffles), and computes and stores
    V output vectors along L. The loop carries `kiln.min_task_size`. What
    the blocks leave of K and L runs as the generic on subviews. Before,
    each element was a scalar load a row away from the last (a 4096^2 f32
    transpose: 45 ms; now 3.5-4).
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::arith::ArithDialect",
                           "mlir::affine::AffineDialect"];
}

def KilnCpuInterchangeWindows : Pass<"kiln-cpu-interchange-windows", "mlir::ModuleOp"> {
  let summary = "A window's taps run outside the output row, which then vectorises";
  let description = [{
    On buffers, before kiln-vectorize: a linalg.generic whose loops after
    its last parallel one are reductions, the innermost shorter than a
    vector (a direct conv's or a pool's taps, kw), runs scalar. Where the
    output's innermost index is that parallel loop (ow, at least a vector
    long) and every input reads along it at an offset (`ow + kw`), at a
    stride of up to 4 (`2 * ow + kw`), or not at all, that loop moves
    innermost: kiln-vectorize (window-reads) then carries vectors of the
    output row through the taps as an outer reduction.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "lanes per vector">];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def KilnCpuFillBorders : Pass<"kiln-cpu-fill-borders", "mlir::ModuleOp"> {
  let summary = "A fill that a copy then overwrites in part fills only the rest";
  let description = [{
    On buffers, before kiln-copies-to-linalg: a linalg.fill of a buffer (an
    alloc or an argument) followed by a memref.copy of another buffer into
    a unit-stride, rank-preserving view of it at static offsets, with no
    other op touching the buffer in between, becomes fills of the slabs
    around the view (along each dim, the parts before and after it within
    the view along the dims before). A pad wrote its interior twice.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::memref::MemRefDialect",
                           "mlir::arith::ArithDialect"];
}

def KilnCpuScans : Pass<"kiln-cpu-scans", "mlir::ModuleOp"> {
  let summary = "kiln.cumsum's serial loop nest as parallel loops, vectorised across columns";
  let description = [{
    A scan (kiln/Lowering/Common/Scan.h: loops over the other dims around
    a loop carrying the running sum along the scan dim, on buffers, at a
    function's top level) over more than one row becomes an scf.parallel
    over the other dims carrying `kiln.min_task_size`. Along the innermost
    dim each row keeps its serial loop. Over an outer dim the innermost
    dim is stepped 4 vector registers of sums at a time: each iteration
    carries that many columns' running sums down the scan dim in
    registers, loading and storing whole vectors of each row (every lane
    adds in the serial loop's order); the columns past the last whole step
    keep the scalar loop, in a parallel loop of their own.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">];
  let dependentDialects = ["mlir::vector::VectorDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect"];
}

def KilnCpuExpandRunTimeShapes : Pass<"kiln-cpu-expand-run-time-shapes", "mlir::ModuleOp"> {
  let summary = "memref.expand_shape splitting a dim into several `?` ones as a reinterpret_cast";
  let description = [{
    Run before expand-strided-metadata, which LLVM 22 crashes in on a
    memref.expand_shape whose group holds more than one `?` dim (a conv's
    pixel count of `?` images split into height and width). Such an
    expansion becomes extract_strided_metadata of its source and a
    reinterpret_cast to its output_shape, each dim's stride the next one's
    times its size, as expand-strided-metadata would make it.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
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
    alone. Innermost dims of run-time size, static ones of 16 to 1024
    iterations together under a scalar body, or a vector body's innermost
    dim of 2 to 15 vectors, run as serial scf.for loops inside the parallel
    one (their indices are counters, not a div/rem per iteration), which
    then carries `kiln.min_task_size` scaled down by their iterations.
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def KilnCpuAsyncParallelFor : Pass<"kiln-cpu-async-parallel-for", "mlir::ModuleOp"> {
  let summary = "async-parallel-for with a minimum task size per loop";
  let description = [{
    Upstream's async-parallel-for, except for the minimum number of
    iterations per task: upstream gives every scf.parallel the same one,
    sized for loops with cheap iterations (an elementwise kernel's vectors),
    so a loop of a few dozen expensive iterations (a matmul's blocks of C)
    ran as one task on one thread. A loop carrying `kiln.min_task_size`
    (an index attribute) uses that size; others use `min-task-size`.
    Launches are not dispatched asynchronously: the caller runs blocks too.
  }];
  let options = [Option<"numWorkerThreads", "num-worker-threads", "int32_t", "8",
                        "threads of the async runtime's pool">,
                 Option<"minTaskSize", "min-task-size", "int32_t", "kiln::kCheapIterationsPerTask",
                        "iterations per task of a loop that does not say">];
  let dependentDialects = ["mlir::async::AsyncDialect", "mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect", "mlir::func::FuncDialect"];
}

def KilnCpuBf16InIntegers : Pass<"kiln-cpu-bf16-in-integers", "mlir::ModuleOp"> {
  let summary = "f32 <-> bf16 conversions as integer operations";
  let description = [{
    LLVM lowers an f32 -> bf16 fptrunc to vcvtneps2bf16 where the host has
    AVX512_BF16 or AVX-NE-CONVERT, and that instruction flushes subnormal
    inputs and results to zero: 3e-39 became 0 on such hosts and stayed
    3e-39 on others (and on the GPUs, and in torch). The conversions become
    upstream's integer expansion instead (round to nearest even, subnormals
    kept, a NaN the quiet NaN 0x7fc0, as torch's CPU conversion and Vulkan's
    emulated bf16), the same result on every host.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect"];
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
