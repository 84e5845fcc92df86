// kiln.attention compiles to one kernel with no score matrix in memory on
// every target: no buffer of the scores' [Lq, Lk] = 96x80 shape anywhere in
// the programs (the matmul, softmax, matmul form has several kernels and
// such buffers between them). CUDA takes its tensor-core kernel (mma.sync,
// ex2, no polynomial exp), which ptxas assembles for sm_80 and sm_90a.
// RUN: rm -rf %t && kiln-run %s --compile-only --device cpu --dump-dir %t/cpu | FileCheck %s --check-prefix=ONE
// RUN: cat %t/cpu/*/1-kernels.mlir %t/cpu/*/2-llvm.mlir | FileCheck %s --check-prefix=NOSCORES
// RUN: kiln-run %s --compile-only --device vulkan --dump-dir %t/vk | FileCheck %s --check-prefix=ONE
// RUN: cat %t/vk/*/1-kernels.mlir %t/vk/*/2-*.mlir | FileCheck %s --check-prefix=NOSCORES
// RUN: kiln-run %s --compile-only --device cuda --chip sm_80 --dump-dir %t/sm_80 | FileCheck %s --check-prefix=ONE
// RUN: cat %t/sm_80/*/1-kernels.mlir %t/sm_80/*/2-gpu.mlir | FileCheck %s --check-prefix=NOSCORES
// RUN: cat %t/sm_80/*/*.ptx | FileCheck %s --check-prefix=PTX
// ONE: compiled {{.*}}: 1 kernel(s)
// NOSCORES: kiln_kernel.attention
// NOSCORES-NOT: 96x80
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ex2.approx.ftz.f32
func.func @main(%q: tensor<2x3x96x64xf16>, %k: tensor<2x3x80x64xf16>, %v: tensor<2x3x80x64xf16>, %m: tensor<1x80xi1>) -> tensor<2x3x96x64xf16> {
  %r = kiln.attention %q, %k, %v, %m {causal = true} : (tensor<2x3x96x64xf16>, tensor<2x3x80x64xf16>, tensor<2x3x80x64xf16>, tensor<1x80xi1>) -> tensor<2x3x96x64xf16>
  return %r : tensor<2x3x96x64xf16>
}
