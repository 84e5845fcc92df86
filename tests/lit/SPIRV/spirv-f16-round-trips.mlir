// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-f16-round-trips))" | FileCheck %s

// An f32 rounded to f16 and widened again (to f32 or f64) is rounded in
// integer operations on its bits; a truncf with another use (the store)
// stays for it; a widening of an f16 that was loaded stays as it is.
// CHECK-LABEL: gpu.func @round_trips
// CHECK: %[[KEPT:.*]] = arith.truncf %[[X:.*]] : f32 to f16
// CHECK: %[[BITS:.*]] = arith.bitcast %[[X]] : f32 to i32
// CHECK: arith.constant -8192 : i32
// CHECK: arith.constant 4095 : i32
// CHECK: arith.constant 1199562752 : i32
// CHECK: arith.uitofp
// CHECK: %[[R:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT: memref.store %[[KEPT]]
// CHECK: memref.store %[[R]]
// CHECK: arith.bitcast %{{.*}} : vector<4xf32> to vector<4xi32>
// CHECK: arith.extf %{{.*}} : vector<4xf32> to vector<4xf64>
// CHECK-NOT: arith.truncf
// CHECK: arith.extf %{{.*}} : f16 to f32
gpu.module @kernels {
  gpu.func @round_trips(%x: f32, %v: vector<4xf32>, %h: memref<4xf16>, %f: memref<4xf32>,
                        %d: memref<4xf64>) kernel {
    %c0 = arith.constant 0 : index
    %n = arith.truncf %x : f32 to f16
    %w = arith.extf %n : f16 to f32
    memref.store %n, %h[%c0] : memref<4xf16>
    memref.store %w, %f[%c0] : memref<4xf32>
    %nv = arith.truncf %v : vector<4xf32> to vector<4xf16>
    %wv = arith.extf %nv : vector<4xf16> to vector<4xf64>
    %e = vector.extract %wv[0] : f64 from vector<4xf64>
    memref.store %e, %d[%c0] : memref<4xf64>
    %l = memref.load %h[%c0] : memref<4xf16>
    %lw = arith.extf %l : f16 to f32
    memref.store %lw, %f[%c0] : memref<4xf32>
    gpu.return
  }
}
