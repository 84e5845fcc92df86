// RUN: kiln-opt %s --kiln-vectorize="vector-width=8 run-time-sizes=1 accumulators=4" --split-input-file | FileCheck %s

// With 4 accumulators a row sum takes whole groups of 4 vectors (32
// elements) in 4 independent chains from 0.0, combines them, adds the
// vectors past the groups (an 8-aligned end of 72: one more), then the
// scalar tail (75 - 72).
// CHECK-LABEL: func @rowsum
// CHECK: %[[C72:.*]] = arith.constant 72 : index
// CHECK: scf.parallel
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[ID:.*]] = vector.broadcast %[[ZERO]] : f32 to vector<8xf32>
// CHECK: %[[G:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %[[C64]] step %{{.*}} iter_args(%{{.*}} = %[[ID]], %{{.*}} = %[[ID]], %{{.*}} = %[[ID]], %{{.*}} = %[[ID]]) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-4: arith.addf %{{.*}} : vector<8xf32>
// CHECK: scf.yield
// CHECK: %[[A:.*]] = arith.addf %[[G]]#0, %[[G]]#1
// CHECK: %[[B:.*]] = arith.addf %[[A]], %[[G]]#2
// CHECK: %[[C:.*]] = arith.addf %[[B]], %[[G]]#3
// CHECK: scf.for %{{.*}} = %[[C64]] to %[[C72]] step %{{.*}} iter_args(%{{.*}} = %[[C]]) -> (vector<8xf32>)
// CHECK: vector.reduction <add>
// CHECK: scf.for {{.*}} -> (f32)
func.func @rowsum(%x: memref<4x75xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x75xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A row of run-time length needs no first vector: a row shorter than one
// runs no vector loop, the identity (-inf for a max) passing through.
// CHECK-LABEL: func @rowmax
// CHECK-NOT: scf.if
// CHECK: arith.constant 0xFF800000 : f32
// CHECK-NOT: scf.if
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: vector.reduction <maximumf>
func.func @rowmax(%x: memref<4x?xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x?xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  return
}
