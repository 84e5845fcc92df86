// RUN: kiln-opt %s --kiln-vectorize="vector-width=8 gather-reads" | FileCheck %s
// RUN: kiln-opt %s --kiln-vectorize="vector-width=8" | FileCheck %s --check-prefix=OFF

// A gather along rows (the body reads x's row at a column an input picks):
// with gather-reads, the input's indices are loaded as a vector, clamped and
// cast as vectors, and the row read by one vector.gather from its first
// element. Left scalar: a gather along dim 0 (the picked index is not the
// innermost), and any gather without gather-reads (GPU targets).
// CHECK-LABEL: func @gathers
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = ({{.*}}) to (%c4, %c16) step (%c1, %c8)
// CHECK: %[[IDX:.*]] = vector.load {{.*}} : memref<4x16xi64>, vector<8xi64>
// CHECK: %[[CLAMPED:.*]] = arith.maxsi %[[IDX]], %{{.*}} : vector<8xi64>
// CHECK: %[[COLS:.*]] = arith.index_cast %[[CLAMPED]] : vector<8xi64> to vector<8xindex>
// CHECK: %[[ALL:.*]] = vector.constant_mask [8] : vector<8xi1>
// CHECK: %[[V:.*]] = vector.gather %{{.*}}[%[[I]], %c0{{.*}}] [%[[COLS]]], %[[ALL]], %{{.*}} : memref<4x40xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK: vector.store %[[V]], %{{.*}}[%[[I]], %[[J]]]
// CHECK: linalg.generic
// CHECK-NOT: vector.gather
// OFF-LABEL: func @gathers
// OFF-NOT: vector.gather
// OFF-COUNT-2: linalg.generic
func.func @gathers(%x: memref<4x40xf32>, %idx: memref<4x16xi64>, %out: memref<4x16xf32>,
                   %rows: memref<4x40xi64>, %out40: memref<4x40xf32>) {
  %zero = arith.constant 0 : i64
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%idx : memref<4x16xi64>) outs(%out : memref<4x16xf32>) {
  ^bb0(%i: i64, %o: f32):
    %c = arith.maxsi %i, %zero : i64
    %col = arith.index_cast %c : i64 to index
    %r = linalg.index 0 : index
    %v = memref.load %x[%r, %col] : memref<4x40xf32>
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%rows : memref<4x40xi64>) outs(%out40 : memref<4x40xf32>) {
  ^bb0(%i: i64, %o: f32):
    %row = arith.index_cast %i : i64 to index
    %j = linalg.index 1 : index
    %v = memref.load %x[%row, %j] : memref<4x40xf32>
    linalg.yield %v : f32
  }
  return
}
