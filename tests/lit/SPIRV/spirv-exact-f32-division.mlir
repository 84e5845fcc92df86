// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-exact-f32-division))" | FileCheck %s

// f32 division (scalar and vector) becomes a 64-bit integer division of the
// significands; f64 division is left to the target.
// CHECK-LABEL: gpu.func @scalar
// CHECK-NOT: arith.divf
// CHECK: arith.uitofp
// CHECK: arith.divui {{.*}} : i64
// CHECK: arith.remui {{.*}} : i64
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK-LABEL: gpu.func @vector
// CHECK-NOT: arith.divf
// CHECK: arith.divui {{.*}} : vector<4xi64>
// CHECK-LABEL: gpu.func @f64
// CHECK: arith.divf {{.*}} : f64
// A statistic's division (afn: docs/precision.md) keeps the driver's.
// CHECK-LABEL: gpu.func @statistic
// CHECK-NOT: arith.divui
// CHECK: arith.divf {{.*}} fastmath<afn> : f32
// CHECK-NOT: arith.divui
gpu.module @m {
  gpu.func @scalar(%a: f32, %b: f32, %out: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %q = arith.divf %a, %b : f32
    memref.store %q, %out[%c0] : memref<1xf32>
    gpu.return
  }
  gpu.func @vector(%a: vector<4xf32>, %b: vector<4xf32>, %out: memref<4xf32>) kernel {
    %c0 = arith.constant 0 : index
    %q = arith.divf %a, %b : vector<4xf32>
    vector.store %q, %out[%c0] : memref<4xf32>, vector<4xf32>
    gpu.return
  }
  gpu.func @f64(%a: f64, %b: f64, %out: memref<1xf64>) kernel {
    %c0 = arith.constant 0 : index
    %q = arith.divf %a, %b : f64
    memref.store %q, %out[%c0] : memref<1xf64>
    gpu.return
  }
  gpu.func @statistic(%sum: f32, %n: f32, %out: memref<1xf32>) kernel {
    %c0 = arith.constant 0 : index
    %q = arith.divf %sum, %n fastmath<afn> : f32
    memref.store %q, %out[%c0] : memref<1xf32>
    gpu.return
  }
}
