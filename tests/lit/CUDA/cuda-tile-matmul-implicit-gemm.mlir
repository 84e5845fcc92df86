// RUN: kiln-opt %s --kiln-cuda-tile-matmul="tensor-cores=1 mma-tile-n=128 mma-stages=3 mma-step-bytes=64" | FileCheck %s

#patch = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d5 + d3, d6 + d4)>
#same7 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d4, d5, d6)>
#shared = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
#rhs = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#out = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#same3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row = affine_map<(d0, d1, d2) -> (d1)>

// A 3x3 conv on an NCHW input (2 images, 16 -> 32 channels, 9x9 outputs,
// padded input, K ordered (c, kh, kw)): im2col into a buffer, the per-image
// GEMM with the weights shared by both images, the bias epilogue. The
// tensor-core kernel reads the patches through im2col's map from the padded
// input (K = 144: 16 channels x 3 x 3; a run of K is no run of the input):
// the patch buffer and its copy are gone, only the weights go through
// cp.async, the gathered elements are stored to shared memory after the
// step's math, and the epilogue writes each of the odd row's elements on
// its own. (conv2d's lowering gathers channels-last patches, 16 bytes at a
// time: cuda-tile-matmul-implicit-gemm-channels-last.mlir.) The two
// images' 81 columns each are one matmul of 162 columns: 2 tiles 128 wide,
// grid z 1.
// CHECK-LABEL: func @conv3x3
// CHECK-NOT: memref<2x1x16x3x3x9x9xf16>
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c2{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-COUNT-2: nvgpu.device_async_copy %arg1
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvgpu.device_async_create_group
// CHECK: memref.load %arg0[{{.*}}] : memref<2x1x16x11x11xf16>
// CHECK: vector.from_elements {{.*}} : vector<8xf16>
// CHECK: vector.store {{.*}} : memref<3x32x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.for
// CHECK: gpu.barrier
// CHECK: memref.load %arg0
// CHECK-COUNT-2: nvgpu.device_async_copy %arg1
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: nvvm.mma.sync
// CHECK: vector.store {{.*}} : memref<3x32x128xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// CHECK: scf.yield
// CHECK: vector.extract_strided_slice {{.*}} {offsets = [0], sizes = [1], strides = [1]}
// CHECK: memref.load %arg2
// CHECK: arith.truncf
// CHECK: memref.store {{.*}}, %arg3
// CHECK-NOT: linalg.
func.func @conv3x3(%x: memref<2x1x16x11x11xf16>, %w: memref<32x144xf16>, %bias: memref<32xf16>, %y: memref<2x32x81xf16>) {
  %zero = arith.constant 0.000000e+00 : f32
  %patches = memref.alloc() : memref<2x1x16x3x3x9x9xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x1x16x11x11xf16>) outs(%patches : memref<2x1x16x3x3x9x9xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %acc = memref.alloc() : memref<2x32x81xf32>
  %b = memref.collapse_shape %patches [[0, 1], [2, 3, 4], [5, 6]] : memref<2x1x16x3x3x9x9xf16> into memref<2x144x81xf16>
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
  memref.dealloc %patches : memref<2x1x16x3x3x9x9xf16>
  return
}

// The patches are read again after the matmul: they stay a buffer, and the
// kernel reads it (element by element, as 81 columns are not 16-byte rows).
// CHECK-LABEL: func @patches_reused
// CHECK: memref.alloc() : memref<2x1x16x3x3x9x9xf16>
// CHECK: linalg.generic
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}} : memref<2x144x81xf16>
func.func @patches_reused(%x: memref<2x1x16x11x11xf16>, %w: memref<32x144xf16>, %acc: memref<2x32x81xf32>, %copy: memref<2x1x16x3x3x9x9xf16>) {
  %patches = memref.alloc() : memref<2x1x16x3x3x9x9xf16>
  linalg.generic {indexing_maps = [#patch, #same7], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x : memref<2x1x16x11x11xf16>) outs(%patches : memref<2x1x16x3x3x9x9xf16>) {
  ^bb0(%in: f16, %o: f16):
    linalg.yield %in : f16
  }
  %b = memref.collapse_shape %patches [[0, 1], [2, 3, 4], [5, 6]] : memref<2x1x16x3x3x9x9xf16> into memref<2x144x81xf16>
  linalg.batch_matmul indexing_maps = [#shared, #rhs, #out] ins(%w, %b : memref<32x144xf16>, memref<2x144x81xf16>) outs(%acc : memref<2x32x81xf32>)
  memref.copy %patches, %copy : memref<2x1x16x3x3x9x9xf16> to memref<2x1x16x3x3x9x9xf16>
  return
}
