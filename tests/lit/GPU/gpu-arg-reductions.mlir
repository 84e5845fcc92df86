// RUN: kiln-opt %s --kiln-gpu-arg-reductions --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-arg-reductions="max-grid-x=16" --split-input-file | FileCheck %s --check-prefix=GRID

// An argmax of 2^20 + 1 floats: 61 slices of 17408 (a multiple of 256
// threads x 4 unrolled positions), one block each, keep (value, index)
// partials; one more block combines them into the outputs. The fills are
// folded into the kernels, and each block combines its threads' partials
// in a tree of 8 steps over workgroup memory.
// CHECK-LABEL: func @full
// CHECK-NOT: linalg.fill
// CHECK: %[[V:.*]] = memref.alloc() : memref<1x61xf32>
// CHECK: %[[I:.*]] = memref.alloc() : memref<1x61xi64>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c61{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(%{{.*}} : memref<256xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<256xi64, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} step %c1024
// CHECK-COUNT-4: arith.cmpf ogt
// CHECK: scf.for {{.*}} step %c256
// CHECK-COUNT-9: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[V]]
// CHECK: memref.store %{{.*}}, %[[I]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}) threads
// CHECK: memref.load %[[V]]
// CHECK: memref.load %[[I]]
// CHECK: memref.store %{{.*}}, %arg1[]
// CHECK-NOT: linalg.generic
// GRID-LABEL: func @full
// GRID: gpu.launch blocks({{.*}}) in ({{.*}} = %c16{{.*}})
// GRID: scf.for %{{.*}} = %{{.*}} to %c61{{.*}} step %c16
#full = affine_map<(d0) -> (d0)>
#scalar = affine_map<(d0) -> ()>
func.func @full(%arg0: memref<1048577xf32>, %arg1: memref<i64>) {
  %c0 = arith.constant 0 : index
  %true = arith.constant true
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %best = memref.alloc() : memref<f32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<f32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<i64>)
  linalg.generic {indexing_maps = [#full, #scalar, #scalar], iterator_types = ["reduction"]}
      ins(%arg0 : memref<1048577xf32>) outs(%best, %arg1 : memref<f32>, memref<i64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %gt = arith.cmpf ogt, %in, %out : f32
    %nan = arith.cmpf uno, %in, %in : f32
    %cur_nan = arith.cmpf uno, %out, %out : f32
    %not_cur_nan = arith.xori %cur_nan, %true : i1
    %nan_wins = arith.andi %nan, %not_cur_nan : i1
    %better = arith.ori %gt, %nan_wins : i1
    %pos = linalg.index 0 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}

// -----

// Along dim 0 of 3000 x 3 i8 (an argmin): three rows of 3000, strided, one
// block each; i8 values are kept as i32 in workgroup memory.
// CHECK-LABEL: func @strided_narrow
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c3{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(%{{.*}} : memref<256xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<256xi64, #gpu.address_space<workgroup>>)
// CHECK: arith.extui %{{.*}} : i8 to i32
// CHECK: arith.cmpi slt
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}] : memref<3xi64>
// CHECK-NOT: gpu.launch
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @strided_narrow(%arg0: memref<3000x3xi8>, %arg1: memref<3xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %max = arith.constant 127 : i8
  %best = memref.alloc() : memref<3xi8>
  linalg.fill ins(%max : i8) outs(%best : memref<3xi8>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<3xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["reduction", "parallel"]}
      ins(%arg0 : memref<3000x3xi8>) outs(%best, %arg1 : memref<3xi8>, memref<3xi64>) {
  ^bb0(%in: i8, %out: i8, %out_i: i64):
    %better = arith.cmpi slt, %in, %out : i8
    %pos = linalg.index 0 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : i8
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : i8, i64
  }
  return
}

// -----

// 8192 rows of 40: a thread per row does better than a block idling most
// of its threads; the generic stays.
// CHECK-LABEL: func @short_rows
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @short_rows(%arg0: memref<8192x40xf32>, %arg1: memref<8192xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %best = memref.alloc() : memref<8192xf32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<8192xf32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<8192xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : memref<8192x40xf32>) outs(%best, %arg1 : memref<8192xf32>, memref<8192xi64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %better = arith.cmpf ogt, %in, %out : f32
    %pos = linalg.index 1 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}

// -----

// Rows of run-time count (the reduced dim stays static, 50000 long): the
// slices are planned on the host as for few static rows (1024 blocks'
// worth, at most 3 of whole 1024s here), a block per slice; where a row is
// one slice its block stores the result, else the partials, which a
// second launch combines (its grid 0 where rows are one slice).
// CHECK-LABEL: func @run_time_rows
// CHECK: memref.alloc
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[AT_LEAST_1:.*]] = arith.maxsi %[[ROWS]], %c1
// CHECK: %[[FILL:.*]] = arith.ceildivsi %c1024, %[[AT_LEAST_1]]
// CHECK: %[[WANTED:.*]] = arith.minsi %[[FILL]], %c3
// CHECK: %[[LEN:.*]] = arith.muli %{{.*}}, %c1024
// CHECK: %[[SLICES:.*]] = arith.ceildivsi %c50000{{.*}}, %[[LEN]]
// CHECK: %[[PV:.*]] = memref.alloc(%[[ROWS]], %[[SLICES]]) : memref<?x?xf32>
// CHECK: %[[ITEMS:.*]] = arith.muli %[[ROWS]], %[[SLICES]]
// CHECK: %[[BLOCKS:.*]] = arith.minsi %[[ITEMS]], %c2147483647
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256,
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[ITEMS]] step %[[BLOCKS]]
// CHECK: arith.muli %{{.*}}, %[[LEN]]
// CHECK: arith.cmpi eq, %[[SLICES]], %c1
// CHECK: memref.store %{{.*}}, %arg1
// CHECK: } else {
// CHECK: memref.store %{{.*}}, %[[PV]]
// CHECK: %[[SEVERAL:.*]] = arith.cmpi sgt, %[[SLICES]], %c1
// CHECK: %[[COMBINES:.*]] = arith.select %[[SEVERAL]], %[[ROWS]], %c0
// CHECK: %[[COMBINE_BLOCKS:.*]] = arith.minsi %[[COMBINES]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[COMBINE_BLOCKS]],
// CHECK: memref.load %[[PV]]
// CHECK-NOT: linalg.generic
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>
func.func @run_time_rows(%arg0: memref<?x50000xf32>, %arg1: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c0_i64 = arith.constant 0 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %rows = memref.dim %arg0, %c0 : memref<?x50000xf32>
  %best = memref.alloc(%rows) : memref<?xf32>
  linalg.fill ins(%ninf : f32) outs(%best : memref<?xf32>)
  linalg.fill ins(%c0_i64 : i64) outs(%arg1 : memref<?xi64>)
  linalg.generic {indexing_maps = [#in, #out, #out], iterator_types = ["parallel", "reduction"]}
      ins(%arg0 : memref<?x50000xf32>) outs(%best, %arg1 : memref<?xf32>, memref<?xi64>) {
  ^bb0(%in: f32, %out: f32, %out_i: i64):
    %better = arith.cmpf ogt, %in, %out : f32
    %pos = linalg.index 1 : index
    %first = arith.cmpi eq, %pos, %c0 : index
    %take = arith.ori %better, %first : i1
    %pos_i64 = arith.index_castui %pos : index to i64
    %v = arith.select %take, %in, %out : f32
    %i = arith.select %take, %pos_i64, %out_i : i64
    linalg.yield %v, %i : f32, i64
  }
  return
}
