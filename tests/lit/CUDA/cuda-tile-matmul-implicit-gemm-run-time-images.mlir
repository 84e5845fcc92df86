// RUN: kiln-opt %s --split-input-file --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 fill-blocks=132" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 tf32=1 fill-blocks=132" | FileCheck %s --check-prefix=TF32

#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5 + d2, d6 + d3, d1, d4)>
#same7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#shared = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// A 3x3 conv over images of run-time size (batch, height and width `?`;
// 16 -> 32 channels; channels-last padded input), as bufferization leaves
// it: the patches' two `?` spatial dims collapse into one pixel count,
// whose size the output's allocation reads through a view. The patches
// are gathered K-major for the wgmma kernel, the collapsed column index
// split by the run-time output width, and never written whole.
// CHECK-LABEL: func @conv3x3_run_time_images(
// CHECK-NOT: memref<?x1x3x3x16x?x?xf16>
// CHECK-DAG: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[OH:.*]] = arith.addi %{{.*}}, %c-2
// CHECK-DAG: %[[OW:.*]] = arith.addi %{{.*}}, %c-2
// CHECK: %[[PIXELS:.*]] = arith.muli %[[OH]], %[[OW]]
// CHECK: memref.alloc(%[[N]], %{{.*}}) : memref<?x32x?xf32>
// CHECK: %[[COLS:.*]] = arith.muli %[[OH]], %[[OW]]
// CHECK: %[[KMAJOR:.*]] = memref.alloc(%[[N]], %[[COLS]]) : memref<?x?x144xf16>
// CHECK: gpu.launch
// CHECK: %[[COL:.*]] = arith.remui %{{.*}}, %[[COLS]]
// CHECK: arith.remui %[[COL]], %[[OW]]
// CHECK: vector.load %arg0{{.*}} : memref<?x?x?x1x16xf16>, vector<8xf16>
// CHECK: vector.store {{.*}}, %[[KMAJOR]]
// CHECK: nvgpu.tma.create.descriptor
// CHECK: gpu.launch
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: linalg.
func.func @conv3x3_run_time_images(%x: memref<?x?x?x1x16xf16>, %w: memref<32x144xf16>) -> memref<?x32x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c-2 = arith.constant -2 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = memref.dim %x, %c0 : memref<?x?x?x1x16xf16>
  %hp = memref.dim %x, %c1 : memref<?x?x?x1x16xf16>
  %wp = memref.dim %x, %c2 : memref<?x?x?x1x16xf16>
  %oh = arith.addi %hp, %c-2 : index
  %ow = arith.addi %wp, %c-2 : index
  %patches = memref.alloc(%n, %oh, %ow) : memref<?x1x3x3x16x?x?xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x?x?x1x16xf16>) outs(%patches : memref<?x1x3x3x16x?x?xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %sized = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x?x?xf16> into memref<?x144x?xf16>
  %p = memref.dim %sized, %c2 : memref<?x144x?xf16>
  %acc = memref.alloc(%n, %p) : memref<?x32x?xf32>
  %b = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x?x?xf16> into memref<?x144x?xf16>
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x32x?xf32>)
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x144xf16>, memref<?x144x?xf16>) outs(%acc : memref<?x32x?xf32>)
  memref.dealloc %patches : memref<?x1x3x3x16x?x?xf16>
  return %acc : memref<?x32x?xf32>
}

// -----

#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5 + d2, d6 + d3, d1, d4)>
#same7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#shared = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// The same conv in f32 with TF32 allowed: no kernel gathers such patches
// of run-time size (the K-major gather is for 16-bit elements), so they
// are written out and the wgmma kernel reads them as any B (not the SIMT
// kernel, as it would if the copy were taken for a gather).
// CHECK-LABEL: func @conv3x3_run_time_images_tf32
// TF32-LABEL: func @conv3x3_run_time_images_tf32
// TF32: linalg.generic {{.*}} outs(%{{.*}} : memref<?x1x3x3x16x?x?xf32>)
// TF32: nvvm.wgmma.mma_async
func.func @conv3x3_run_time_images_tf32(%x: memref<?x?x?x1x16xf32>, %w: memref<32x144xf32>) -> memref<?x32x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c-2 = arith.constant -2 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = memref.dim %x, %c0 : memref<?x?x?x1x16xf32>
  %hp = memref.dim %x, %c1 : memref<?x?x?x1x16xf32>
  %wp = memref.dim %x, %c2 : memref<?x?x?x1x16xf32>
  %oh = arith.addi %hp, %c-2 : index
  %ow = arith.addi %wp, %c-2 : index
  %patches = memref.alloc(%n, %oh, %ow) : memref<?x1x3x3x16x?x?xf32>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x?x?x1x16xf32>) outs(%patches : memref<?x1x3x3x16x?x?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  %sized = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x?x?xf32> into memref<?x144x?xf32>
  %p = memref.dim %sized, %c2 : memref<?x144x?xf32>
  %acc = memref.alloc(%n, %p) : memref<?x32x?xf32>
  %b = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x?x?xf32> into memref<?x144x?xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x32x?xf32>)
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x144xf32>, memref<?x144x?xf32>) outs(%acc : memref<?x32x?xf32>)
  memref.dealloc %patches : memref<?x1x3x3x16x?x?xf32>
  return %acc : memref<?x32x?xf32>
}
