// RUN: kiln-opt %s --pass-pipeline="builtin.module(spirv.module(kiln-spirv-preserve-nan{widths=32,64}))" | FileCheck %s

// Every entry point preserves NaN and infinities for the widths asked.
// CHECK: spirv.EntryPoint "GLCompute" @k
// CHECK-NEXT: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 32
// CHECK-NEXT: spirv.ExecutionMode @k "SignedZeroInfNanPreserve", 64
// CHECK-NOT: "SignedZeroInfNanPreserve", 16
spirv.module Logical GLSL450 {
  spirv.func @k() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
  spirv.ExecutionMode @k "LocalSize", 1, 1, 1
}
