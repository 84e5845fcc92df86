// RUN: kiln-opt %s --kiln-vectorize="vector-width=8 run-time-sizes=1" --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-vectorize="vector-width=8" --split-input-file | FileCheck %s --check-prefix=STATIC

// A `?` row: the vector loop ends at size - size % 8, computed at run time,
// and a scalar generic on subviews of run-time size runs the rest.
// CHECK-LABEL: func @scale
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %{{.*}}, %c0
// CHECK-DAG: %[[LEN:.*]] = memref.dim %{{.*}}, %c1
// CHECK: %[[REST:.*]] = arith.remsi %[[LEN]], %c8
// CHECK: %[[END:.*]] = arith.subi %[[LEN]], %[[REST]]
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%[[ROWS]], %[[END]]) step (%{{.*}}, %c8)
// CHECK: vector.load %{{.*}} : memref<?x?xf32>, vector<8xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: math.exp %{{.*}} : vector<8xf32>
// CHECK: vector.store
// CHECK: memref.subview %{{.*}}[0, %[[END]]] [%{{.*}}, %{{.*}}] [1, 1]
// CHECK: linalg.generic
// Without run-time-sizes it keeps the scalar lowering.
// STATIC-LABEL: func @scale
// STATIC-NOT: vector.load
// STATIC: linalg.generic
func.func @scale(%x: memref<?x?xf32>, %r: memref<?xf32>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %r : memref<?x?xf32>, memref<?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A reduction over a `?` row: the vector chunks only where the row holds
// one (it may be shorter than a vector), then the scalar tail from there.
// CHECK-LABEL: func @rowsum
// CHECK: scf.parallel
// CHECK: %[[INIT:.*]] = memref.load
// CHECK: %[[ANY:.*]] = arith.cmpi ne, %[[END:.*]], %c0
// CHECK: %[[VEC:.*]] = scf.if %[[ANY]] -> (f32)
// CHECK: vector.load %{{.*}} : memref<?x?xf32>, vector<8xf32>
// CHECK: scf.for {{.*}} to %[[END]] step %{{.*}} -> (vector<8xf32>)
// CHECK: vector.reduction <add>, %{{.*}}, %[[INIT]]
// CHECK: } else {
// CHECK: scf.yield %[[INIT]]
// CHECK: scf.for {{.*}} = %[[END]] to {{.*}} iter_args(%{{.*}} = %[[VEC]]) -> (f32)
// CHECK: memref.store
// STATIC-LABEL: func @rowsum
// STATIC-NOT: vector.reduction
func.func @rowsum(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
