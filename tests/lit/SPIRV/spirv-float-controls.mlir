// RUN: kiln-opt %s --pass-pipeline="builtin.module(spirv.module(kiln-spirv-float-controls{nan-widths=32,64 denorm-widths=16,32}))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(spirv.module(kiln-spirv-float-controls))" | FileCheck %s --check-prefix=NONE

// Every entry point preserves NaN and infinities, and subnormals, for the
// widths asked.
// CHECK: spirv.EntryPoint "GLCompute" @k
// CHECK-NEXT: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 32
// CHECK-NEXT: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 64
// CHECK-NEXT: spirv.ExecutionMode @k "DenormPreserve", 16
// CHECK-NEXT: spirv.ExecutionMode @k "DenormPreserve", 32
// CHECK-NOT: "SignedZeroInfNanPreserve", 16
// CHECK-NOT: "DenormPreserve", 64
// NONE-NOT: Preserve
spirv.module Logical GLSL450 {
  spirv.func @k() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
  spirv.ExecutionMode @k "LocalSize", 1, 1, 1
}
