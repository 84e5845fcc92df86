// kiln.attention compiles to one kernel with no score matrix in memory: no
// buffer of the scores' [Lq, Lk] = 96x80 shape anywhere in the CPU
// program (the matmul, softmax, matmul form has several kernels and
// such buffers between them).
// RUN: rm -rf %t && kiln-run %s --compile-only --device cpu --dump-dir %t/cpu | FileCheck %s --check-prefix=CPU
// RUN: cat %t/cpu/*/1-kernels.mlir %t/cpu/*/2-llvm.mlir | FileCheck %s --check-prefix=NOSCORES
// CPU: compiled {{.*}}: 1 kernel(s)
// NOSCORES: kiln_kernel.attention
// NOSCORES-NOT: 96x80
func.func @main(%q: tensor<2x3x96x64xf16>, %k: tensor<2x3x80x64xf16>, %v: tensor<2x3x80x64xf16>, %m: tensor<1x80xi1>) -> tensor<2x3x96x64xf16> {
  %r = kiln.attention %q, %k, %v, %m {causal = true} : (tensor<2x3x96x64xf16>, tensor<2x3x80x64xf16>, tensor<2x3x80x64xf16>, tensor<1x80xi1>) -> tensor<2x3x96x64xf16>
  return %r : tensor<2x3x96x64xf16>
}
