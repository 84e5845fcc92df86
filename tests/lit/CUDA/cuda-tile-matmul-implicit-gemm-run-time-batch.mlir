// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 wgmma=1 fill-blocks=132" | FileCheck %s

#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5 + d2, d6 + d3, d1, d4)>
#same7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#shared = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>

// A 3x3 conv over a run-time batch (16 -> 32 channels, 9x9 outputs,
// channels-last padded input), as bufferization leaves it: the matmul's
// output is sized by a dim read through a view of the patches. mma.sync
// needs static sizes, so the patches are gathered K-major (a kernel of
// run-time grid, 8 channels a thread) for the wgmma kernel, and the size
// read off the view becomes the allocation's size: the patches are never
// written whole.
// CHECK-LABEL: func @conv3x3_run_time_batch
// CHECK-NOT: memref<?x1x3x3x16x9x9xf16>
// CHECK: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK: %[[KMAJOR:.*]] = memref.alloc(%[[N]]) : memref<?x81x144xf16>
// CHECK: %[[RUNS:.*]] = arith.muli %[[N]], %c1458
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[RUNS]], %c256
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[BLOCKS]],
// CHECK: vector.load %arg0{{.*}} : memref<?x11x11x1x16xf16>, vector<8xf16>
// CHECK: vector.store {{.*}}, %[[KMAJOR]]
// CHECK: nvgpu.tma.create.descriptor
// CHECK: gpu.launch
// CHECK: nvvm.wgmma.mma_async
// CHECK-NOT: linalg.
func.func @conv3x3_run_time_batch(%x: memref<?x11x11x1x16xf16>, %w: memref<32x144xf16>) -> memref<?x32x81xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.000000e+00 : f32
  %n = memref.dim %x, %c0 : memref<?x11x11x1x16xf16>
  %patches = memref.alloc(%n) : memref<?x1x3x3x16x9x9xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<?x11x11x1x16xf16>) outs(%patches : memref<?x1x3x3x16x9x9xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %sized = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x9x9xf16> into memref<?x144x81xf16>
  %m = memref.dim %sized, %c0 : memref<?x144x81xf16>
  %acc = memref.alloc(%m) : memref<?x32x81xf32>
  %b = memref.collapse_shape %patches [[0], [1, 2, 3, 4], [5, 6]] : memref<?x1x3x3x16x9x9xf16> into memref<?x144x81xf16>
  linalg.fill ins(%zero : f32) outs(%acc : memref<?x32x81xf32>)
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x144xf16>, memref<?x144x81xf16>) outs(%acc : memref<?x32x81xf32>)
  memref.dealloc %patches : memref<?x1x3x3x16x9x9xf16>
  return %acc : memref<?x32x81xf32>
}
