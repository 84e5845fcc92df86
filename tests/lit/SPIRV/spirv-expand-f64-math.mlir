// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-expand-f64-math))" | FileCheck %s

// f64 exp becomes a polynomial scaled by 2^k through exponent bits (k
// rounded half to even by adding and subtracting 2^52: no f64 roundeven is
// left to the driver); erf fdlibm's rational approximations with no loop
// (lavapipe ends an invocation's loops after 65535 iterations: a 100-term
// loop per element cut reductions short); f32 math is left to the target.
// CHECK-LABEL: gpu.func @f64_math
// CHECK-NOT: math.exp {{.*}} : f64
// CHECK-NOT: math.roundeven {{.*}} : f64
// CHECK: arith.constant 0x4330000000000000 : f64
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i64 to f64
// CHECK-NOT: scf.for
// CHECK: arith.constant 0.84506291151046753 : f64
// CHECK-NOT: scf.for
// CHECK-NOT: math.erf
// CHECK-NOT: math.roundeven {{.*}} : f64
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.roundeven %{{.*}} : f32
gpu.module @kernels {
  gpu.func @f64_math(%a: f64, %b: f32, %out: memref<3xf64>, %out32: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %e = math.exp %a : f64
    %r = math.erf %a : f64
    %f = math.exp %b : f32
    %g = math.roundeven %a : f64
    %h = math.roundeven %b : f32
    memref.store %e, %out[%c0] : memref<3xf64>
    memref.store %r, %out[%c1] : memref<3xf64>
    %c2 = arith.constant 2 : index
    memref.store %g, %out[%c2] : memref<3xf64>
    memref.store %f, %out32[%c0] : memref<1xf32>
    memref.store %h, %out32[%c0] : memref<1xf32>
    gpu.return
  }
}
