// RUN: kiln-opt %s --kiln-gpu-split-reductions --split-input-file | FileCheck %s

// A full sum of 2^20 + 1 floats: 64 slices of 16384 reduce into partials
// (64 blocks once kiln-gpu-row-reductions runs), the partials into the
// output, then the one element left over is added.
// The views come first, so that each fill directly precedes its reduction
// (kiln-gpu-row-reductions then takes the fill into the reduction's kernel).
// CHECK-LABEL: func @full_sum
// CHECK: %[[HEAD:.*]] = memref.subview %arg0[0] [1048576] [1]
// CHECK: %[[S:.*]] = memref.expand_shape %[[HEAD]] {{\[}}[0, 1]] output_shape [64, 16384]
// CHECK: %[[TAIL:.*]] = memref.subview %arg0[1048576] [1] [1]
// CHECK: %[[P:.*]] = memref.alloc() : memref<64xf32>
// CHECK-NEXT: arith.constant
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[P]] : memref<64xf32>)
// CHECK-NEXT: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%[[S]] : memref<64x16384xf32>) outs(%[[P]] : memref<64xf32>)
// CHECK: arith.addf {{.*}} fastmath<reassoc>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg1 : memref<f32>)
// CHECK-NEXT: linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[P]] : memref<64xf32>) outs(%arg1 : memref<f32>)
// CHECK: linalg.generic {{.*}} ins(%[[TAIL]] : {{.*}}) outs(%arg1 : memref<f32>)
func.func @full_sum(%arg0: memref<1048577xf32>, %arg1: memref<f32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%arg1 : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%arg0 : memref<1048577xf32>) outs(%arg1 : memref<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// 4 rows of 65536: 256 slices per row would be too short, so 4 of 16384
// each (16 blocks); the partials start at max's identity, -inf.
// CHECK-LABEL: func @few_rows_max
// CHECK: memref.expand_shape {{.*}} output_shape [4, 4, 16384]
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x4xf32>
// CHECK: linalg.fill ins(%cst{{.*}} : f32) outs(%[[P]] : memref<4x4xf32>)
// CHECK: arith.maximumf
// CHECK: linalg.generic {{.*}} ins(%[[P]] : memref<4x4xf32>) outs(%arg1 : memref<4xf32>)
// CHECK-NOT: memref.subview
// CHECK: return
func.func @few_rows_max(%arg0: memref<4x65536xf32>, %arg1: memref<4xf32>) {
  %cst = arith.constant 0xFF800000 : f32
  linalg.fill ins(%cst : f32) outs(%arg1 : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<4x65536xf32>) outs(%arg1 : memref<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Enough rows to fill the GPU, or rows too short: left to one block per row.
// CHECK-LABEL: func @many_rows
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic
// CHECK-NOT: linalg.generic
func.func @many_rows(%arg0: memref<128x32768xf32>, %arg1: memref<128xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<128x32768xf32>) outs(%arg1 : memref<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// 3 rows of run-time length: the slice count (at most 342 a row, at least
// 16384 elements each) and length (whole 1024s) are host arithmetic; one
// block per slice reduces it into the partials, gpu.all_reduce combining
// its threads, then one block per row combines the row's partials into the
// output's value.
// CHECK-LABEL: func @run_time_length
// CHECK: linalg.fill
// CHECK: %[[N:.*]] = memref.dim %arg0, %c1
// CHECK: arith.divsi %[[N]], %c16384
// CHECK: %[[SLICES:.*]] = arith.minsi %c342
// CHECK: arith.ceildivsi %[[N]], %[[SLICES]]
// CHECK: %[[GRANULES:.*]] = arith.ceildivsi
// CHECK: %[[LEN:.*]] = arith.muli %[[GRANULES]], %c1024
// CHECK: %[[P:.*]] = memref.alloc(%[[SLICES]]) : memref<3x?xf32>
// CHECK: %[[BLOCKS:.*]] = arith.muli %c3, %[[SLICES]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[BLOCKS]], {{.*}}) threads({{.*}}) in ({{.*}} = %c256,
// CHECK: arith.muli %{{.*}}, %[[LEN]]
// CHECK: scf.for %{{.*}} step %c1024
// CHECK-COUNT-4: memref.load %arg0
// CHECK: gpu.all_reduce add
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c3
// CHECK: scf.for %{{.*}} to %[[SLICES]] step %c256
// CHECK: gpu.all_reduce add
// CHECK: memref.load %arg1
// CHECK: memref.store %{{.*}}, %arg1
// CHECK-NOT: linalg.generic
func.func @run_time_length(%arg0: memref<3x?xf32>, %arg1: memref<3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.fill ins(%cst : f32) outs(%arg1 : memref<3xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%arg0 : memref<3x?xf32>) outs(%arg1 : memref<3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
