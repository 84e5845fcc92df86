// RUN: kiln-opt %s --kiln-to-cpu-llvm | FileCheck %s

// The CPU pipeline converts between f32 and bf16 in integer operations
// (kiln-cpu-bf16-in-integers, after every pass that may still create such
// a conversion): no fptrunc or fpext of bf16 reaches LLVM, which lowers
// fptrunc to vcvtneps2bf16 on AVX512_BF16 hosts (subnormals flushed).
// CHECK-LABEL: llvm.func @main
// CHECK-NOT: llvm.fptrunc {{.*}}bf16
// CHECK-NOT: llvm.fpext {{.*}}bf16
func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %n = kiln.cast %x : tensor<4x64xf32> -> tensor<4x64xbf16>
  %e = kiln.exp %n : tensor<4x64xbf16>
  %w = kiln.cast %e : tensor<4x64xbf16> -> tensor<4x64xf32>
  return %w : tensor<4x64xf32>
}
