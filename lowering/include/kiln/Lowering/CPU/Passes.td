//===- Passes.td - kiln lowering: passes of the CPU target ---*- tablegen -*-===//
#ifndef KILN_LOWERING_CPU_PASSES_TD
#define KILN_LOWERING_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnCpuTileMatmul : Pass<"kiln-cpu-tile-matmul", "mlir::ModuleOp"> {
  let summary = "Register-blocked, vectorised f32 matmul kernels on buffers";
  let description = [{
    Rewrites f32 linalg.matmul / linalg.batch_matmul on buffers into a
    parallel loop over blocks of C, each held in vector registers across the
    k loop (broadcast A, vector FMA with a row of B). Other element types keep
    the generic lowering.
  }];
  let options = [Option<"vectorWidth", "vector-width", "int64_t",
                        "kiln::VectorizeTunables{}.cpuLanes",
                        "f32 lanes per vector register (16 for AVX-512, 8 for AVX2)">];
  let dependentDialects = ["mlir::vector::VectorDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect", "mlir::math::MathDialect"];
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
