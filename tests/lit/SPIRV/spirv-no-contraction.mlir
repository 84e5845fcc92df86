// RUN: kiln-opt %s --pass-pipeline="builtin.module(spirv.module(kiln-spirv-no-contraction))" | FileCheck %s

// Float add, sub and mul round on their own (no fma contraction); integer
// and other float ops are left alone.
// CHECK: spirv.FMul {{.*}} {no_contraction}
// CHECK: spirv.FAdd {{.*}} {no_contraction}
// CHECK: spirv.FSub {{.*}} {no_contraction}
// CHECK-NOT: spirv.IAdd {{.*}}no_contraction
// CHECK-NOT: spirv.FDiv {{.*}}no_contraction
spirv.module Logical GLSL450 {
  spirv.func @k(%a: vector<4xf32>, %b: vector<4xf32>, %i: i32) -> vector<4xf32> "None" {
    %m = spirv.FMul %a, %b : vector<4xf32>
    %s = spirv.FAdd %m, %b : vector<4xf32>
    %d = spirv.FSub %s, %a : vector<4xf32>
    %j = spirv.IAdd %i, %i : i32
    %q = spirv.FDiv %d, %a : vector<4xf32>
    spirv.ReturnValue %q : vector<4xf32>
  }
}
