// RUN: kiln-opt %s --kiln-cuda-tile-matmul | FileCheck %s
// RUN: kiln-opt %s --kiln-cuda-tile-matmul=fill-blocks=132 | FileCheck %s --check-prefix=FILL

// A 300x200 * 200x260 f32 matmul: 3x3 blocks of 128x128 outputs, 256
// threads, two buffers of a 16x128 slice of A and of B in workgroup
// memory. Each thread stages a 32-byte run of A and of B per step (one
// vector load where wholly inside, element by element at the edges); the
// loop over K's 13 steps issues the next step's loads first, then the
// rank-1 updates of sixteen 4-wide accumulators (8 x 8 outputs), then the
// stores of the next slice into the other buffer, and one barrier. C's
// outputs are added to C (no zero fill to fold).
// CHECK-LABEL: func @mm
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// CHECK-SAME: workgroup(%[[AS:[a-z0-9]+]] : memref<2x16x128xf32, #gpu.address_space<workgroup>>, %[[BS:[a-z0-9]+]] : memref<2x16x128xf32, #gpu.address_space<workgroup>>)
// CHECK: vector.load %arg0{{.*}} {alignment = 16 : i64} : memref<300x200xf32>, vector<8xf32>
// CHECK: } else {
// CHECK: memref.load %arg0
// CHECK: vector.load %arg1{{.*}} : memref<200x260xf32>, vector<8xf32>
// CHECK: memref.store %{{.*}}, %[[AS]]
// CHECK: vector.store %{{.*}}, %[[BS]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %c13{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: vector.load %[[AS]]
// CHECK: vector.load %[[BS]]
// CHECK: vector.fma
// CHECK: memref.store %{{.*}}, %[[AS]]
// CHECK: vector.store %{{.*}}, %[[BS]]
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: vector.load %arg2
// CHECK: arith.addf
// CHECK: vector.store %{{.*}}, %arg2
// CHECK: } else {
// CHECK: memref.load %arg2
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-NOT: linalg.matmul
func.func @mm(%a: memref<300x200xf32>, %b: memref<200x260xf32>, %c: memref<300x260xf32>) {
  linalg.matmul ins(%a, %b : memref<300x200xf32>, memref<200x260xf32>) outs(%c : memref<300x260xf32>)
  return
}

// Sizes known only at run time: the grid is computed from C's dims on the
// host, the kernel reads M, N and K and bounds its loads, loop and stores
// by them; the zero fill folds into the stores. A run of A is one aligned
// vector load when A's rows are a multiple of 4 f32 long (checked at run
// time). No tune key (they name static sizes).
// CHECK-LABEL: func @dynamic
// CHECK-NOT: linalg.fill
// CHECK-DAG: %[[N:.*]] = memref.dim %arg2, %c1
// CHECK-DAG: %[[M:.*]] = memref.dim %arg2, %c0
// CHECK-DAG: %[[BX:.*]] = arith.ceildivsi %[[N]], %c128
// CHECK-DAG: %[[BY:.*]] = arith.ceildivsi %[[M]], %c128
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[BX]], %{{[a-z0-9]+}} = %[[BY]],
// CHECK: %[[K:.*]] = memref.dim %arg0, %c1
// CHECK: %[[ROW:.*]] = memref.dim %arg0, %c1
// CHECK: %[[REST:.*]] = arith.remui %[[ROW]], %c4
// CHECK: %[[ALIGNED:.*]] = arith.cmpi eq, %[[REST]], %c0
// CHECK: arith.andi %{{.*}}, %[[ALIGNED]]
// CHECK: vector.load %arg0{{.*}} {alignment = 16 : i64} : memref<?x?xf32>, vector<8xf32>
// CHECK: %[[STEPS:.*]] = arith.ceildivsi %[[K]], %c16
// CHECK: scf.for %{{.*}} = %c0{{[_0-9]*}} to %[[STEPS]]
// CHECK-NOT: memref.load %arg2
// CHECK: vector.store %{{.*}}, %arg2
// With fill-blocks (the CUDA pipeline's), run-time sizes get both untuned
// tilings, chosen on the host as forOutput chooses for static ones: 128x128
// tiles where they make at least 132 blocks, 64x64 where they do not (a
// decode step's few rows).
// FILL-LABEL: func @dynamic
// FILL: %[[BLOCKS:.*]] = arith.muli
// FILL: %[[FEW:.*]] = arith.cmpi slt, %[[BLOCKS]], %c132
// FILL: %[[FEW1:.*]] = arith.select %[[FEW]], %c1{{[_0-9]*}}, %c0
// FILL: %[[MANY:.*]] = arith.cmpi sge, %[[BLOCKS]], %c132
// FILL: %[[MANY1:.*]] = arith.select %[[MANY]], %c1{{[_0-9]*}}, %c0
// FILL: %[[WIDE:.*]] = arith.cmpi eq, %[[FEW1]], %c0
// FILL: %[[NARROW:.*]] = arith.cmpi eq, %[[MANY1]], %c0
// FILL: %[[WX:.*]] = arith.select %[[WIDE]], %{{.*}}, %c0
// FILL: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[WX]],
// FILL-SAME: workgroup(%{{.*}} : memref<2x16x128xf32, #gpu.address_space<workgroup>>
// FILL: %[[NX:.*]] = arith.select %[[NARROW]], %{{.*}}, %c0
// FILL: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[NX]],
// FILL-SAME: workgroup(%{{.*}} : memref<2x16x64xf32, #gpu.address_space<workgroup>>
// FILL-NOT: linalg.matmul
// FILL: return
func.func @dynamic(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<?x?xf32>)
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// A bf16 matmul of run-time size takes the SIMT kernel without wgmma (the
// mma.sync kernel needs static shapes; cuda-tile-matmul-wgmma.mlir has the
// sm_90a case).
// CHECK-LABEL: func @dynamic_bf16
// CHECK: gpu.launch
// CHECK-SAME: memref<2x16x128xf32, #gpu.address_space<workgroup>>
// CHECK: arith.extf %{{.*}} : bf16 to f32
func.func @dynamic_bf16(%a: memref<?x64xbf16>, %b: memref<64x64xbf16>, %c: memref<?x64xf32>) {
  linalg.matmul ins(%a, %b : memref<?x64xbf16>, memref<64x64xbf16>) outs(%c : memref<?x64xf32>)
  return
}

// bf16 inputs are widened to f32 as they are staged.
// CHECK-LABEL: func @bf16
// CHECK: gpu.launch
// CHECK: memref.load %arg0{{.*}} : memref<4x4xbf16>
// CHECK-NEXT: arith.extf %{{.*}} : bf16 to f32
func.func @bf16(%a: memref<4x4xbf16>, %b: memref<4x4xbf16>, %c: memref<4x4xf32>) {
  linalg.matmul ins(%a, %b : memref<4x4xbf16>, memref<4x4xbf16>) outs(%c : memref<4x4xf32>)
  return
}

// An f16 result (accumulating in f16) is left to the generic lowering.
// CHECK-LABEL: func @f16_accumulator
// CHECK: linalg.matmul
func.func @f16_accumulator(%a: memref<4x4xf16>, %b: memref<4x4xf16>, %c: memref<4x4xf16>) {
  linalg.matmul ins(%a, %b : memref<4x4xf16>, memref<4x4xf16>) outs(%c : memref<4x4xf16>)
  return
}

// The SIMT kernel runs a bias + relu consumer of C before its stores too.
// CHECK-LABEL: func @bias_relu
// CHECK: gpu.launch
// CHECK: vector.fma
// CHECK: memref.load %arg2
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %arg3
// CHECK-NOT: linalg.generic
func.func @bias_relu(%a: memref<64x32xf32>, %b: memref<32x64xf32>, %bias: memref<64xf32>,
                     %out: memref<64x64xf32>) {
  %c = memref.alloc() : memref<64x64xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %bias : memref<64x64xf32>, memref<64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    %z = arith.constant 0.0 : f32
    %r = arith.maximumf %s, %z : f32
    linalg.yield %r : f32
  }
  memref.dealloc %c : memref<64x64xf32>
  return
}

// An epilogue whose output is a temporary allocated after the matmul: the
// allocation moves above the launch that stores into it.
// CHECK-LABEL: func @epilogue_into_temporary
// CHECK: %[[T:.*]] = memref.alloc() : memref<64x64xf32>
// CHECK: gpu.launch
// CHECK: math.tanh
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK-NOT: linalg.generic
// CHECK: memref.collapse_shape %[[T]]
func.func @epilogue_into_temporary(%a: memref<64x32xf32>, %b: memref<32x64xf32>,
                                   %out: memref<4096xf32>) {
  %c = memref.alloc() : memref<64x64xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x64xf32>) outs(%c : memref<64x64xf32>)
  %t = memref.alloc() : memref<64x64xf32>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<64x64xf32>) outs(%t : memref<64x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = math.tanh %v : f32
    linalg.yield %r : f32
  }
  %flat = memref.collapse_shape %t [[0, 1]] : memref<64x64xf32> into memref<4096xf32>
  memref.copy %flat, %out : memref<4096xf32> to memref<4096xf32>
  return
}

// A stepped slice as A (its rows 2 elements apart) and a strided C: no
// vector loads or stores of them (they would not verify), element by
// element instead (differential program 141 of seed 1 on the H200).
// CHECK-LABEL: func @strided_rows
// CHECK-NOT: vector.load %arg0
// CHECK-NOT: vector.store {{.*}}, %arg2
// CHECK: memref.load %arg0
// CHECK: memref.store {{.*}}, %arg2
func.func @strided_rows(%a: memref<1x1xf32, strided<[1, 2], offset: 3>>, %b: memref<1x4xf32>,
                        %c: memref<1x4xf32, strided<[8, 2]>>) {
  linalg.matmul ins(%a, %b : memref<1x1xf32, strided<[1, 2], offset: 3>>, memref<1x4xf32>)
      outs(%c : memref<1x4xf32, strided<[8, 2]>>)
  return
}
