// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-expand-f64-math))" | FileCheck %s

// f64 exp becomes a polynomial scaled by 2^k through exponent bits; erf a
// loop of positive terms; f32 math is left to the target.
// CHECK-LABEL: gpu.func @f64_math
// CHECK-NOT: math.exp {{.*}} : f64
// CHECK: math.roundeven
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i64 to f64
// CHECK: scf.for
// CHECK-NOT: math.erf
// CHECK: math.exp %{{.*}} : f32
gpu.module @kernels {
  gpu.func @f64_math(%a: f64, %b: f32, %out: memref<3xf64>, %out32: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %e = math.exp %a : f64
    %r = math.erf %a : f64
    %f = math.exp %b : f32
    memref.store %e, %out[%c0] : memref<3xf64>
    memref.store %r, %out[%c1] : memref<3xf64>
    memref.store %f, %out32[%c0] : memref<1xf32>
    gpu.return
  }
}
