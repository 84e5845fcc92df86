// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=128 mma-stages=3 mma-step-bytes=64 fill-blocks=132" | FileCheck %s

#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5 + d2, d6 + d3, d1, d4)>
#same7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#shared = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#same3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d1)>

// A 3x3 conv as conv2d's lowering leaves it (2 images, 16 -> 32 channels,
// 9x9 outputs, a channels-last padded input [N, H, W, G, C], K ordered
// (kh, kw, c)): 8 consecutive K are 8 channels of one pixel, 16 aligned
// bytes. The tensor-core kernel gathers B by 16-byte cp.async from the
// input (never writing the patches), stages it K-major as A and loads its
// fragments by ldmatrix without .trans. The two images' 81 columns each
// are one matmul of 162 columns: one launch of 3 tiles 64 wide (narrowed
// from 128 to fill the GPU), grid z 1; the epilogue splits a column into
// (image, pixel).
// CHECK-LABEL: func @conv3x3
// CHECK-NOT: memref<2x1x3x3x16x9x9xf16>
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-COUNT-1: nvgpu.device_async_copy %arg1
// CHECK: nvgpu.device_async_copy %arg0[{{.*}}], %{{.*}}[{{.*}}], 8, %{{.*}} {bypassL1} : memref<2x11x11x1x16xf16> to memref<3x64x32xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_create_group
// CHECK-NOT: memref.load %arg0
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<3x128x32xf16
// CHECK: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false} : memref<3x64x32xf16
// CHECK: nvvm.mma.sync
// CHECK: scf.yield
// CHECK: arith.divui %{{.*}}, %c81
// CHECK: arith.remui %{{.*}}, %c81
// CHECK: memref.load %arg2
// CHECK: arith.truncf
// CHECK: memref.store {{.*}}, %arg3
// CHECK-NOT: linalg.
func.func @conv3x3(%x: memref<2x11x11x1x16xf16>, %w: memref<32x144xf16>, %bias: memref<32xf16>, %y: memref<2x32x81xf16>) {
  %zero = arith.constant 0.000000e+00 : f32
  %patches = memref.alloc() : memref<2x1x3x3x16x9x9xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x11x11x1x16xf16>) outs(%patches : memref<2x1x3x3x16x9x9xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %acc = memref.alloc() : memref<2x32x81xf32>
  %b = memref.collapse_shape %patches [[0, 1], [2, 3, 4], [5, 6]] : memref<2x1x3x3x16x9x9xf16> into memref<2x144x81xf16>
  linalg.fill ins(%zero : f32) outs(%acc : memref<2x32x81xf32>)
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x144xf16>, memref<2x144x81xf16>) outs(%acc : memref<2x32x81xf32>)
  linalg.generic {indexing_maps = [#same3, #row, #same3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%acc, %bias : memref<2x32x81xf32>, memref<32xf16>) outs(%y : memref<2x32x81xf16>) {
  ^bb0(%in: f32, %bi: f16, %o: f16):
    %e = arith.extf %bi : f16 to f32
    %s = arith.addf %in, %e : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  }
  memref.dealloc %acc : memref<2x32x81xf32>
  memref.dealloc %patches : memref<2x1x3x3x16x9x9xf16>
  return
}

// 12 channels (a 2x3 kernel, K = 72): a run of 8 K crosses pixels, so B is gathered element by
// element (and stored to shared memory N-major after the step's math).
// CHECK-LABEL: func @channels_not_runs
// CHECK: gpu.launch
// CHECK: memref.load %arg0[{{.*}}] : memref<2x10x11x1x12xf16>
// CHECK: vector.from_elements {{.*}} : vector<8xf16>
// CHECK-NOT: nvgpu.ldmatrix {{.*}}transpose = false} : memref<3x64x32xf16
func.func @channels_not_runs(%x: memref<2x10x11x1x12xf16>, %w: memref<32x72xf16>, %acc: memref<2x32x81xf32>) {
  %patches = memref.alloc() : memref<2x1x2x3x12x9x9xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x10x11x1x12xf16>) outs(%patches : memref<2x1x2x3x12x9x9xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %b = memref.collapse_shape %patches [[0, 1], [2, 3, 4], [5, 6]] : memref<2x1x2x3x12x9x9xf16> into memref<2x72x81xf16>
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x72xf16>, memref<2x72x81xf16>) outs(%acc : memref<2x32x81xf32>)
  memref.dealloc %patches : memref<2x1x2x3x12x9x9xf16>
  return
}
