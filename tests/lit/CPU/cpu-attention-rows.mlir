// RUN: kiln-opt %s --kiln-cpu-attention-blocks=vector-width=4 --canonicalize --split-input-file | FileCheck %s

// kiln-cpu-attention-blocks' rows kernel (CpuAttentionRows.cpp): fewer
// static query rows than a block (a decode step) run a task per row
// against K and V where they stand. A span is 2 vectors of keys: each
// vector's scores are FMAs along the head dim into an accumulator per key
// (4 keys, their rows clamped to the last key), then summed across lanes
// together by a tree of shuffles leaving key j in lane j; scaled, keys past
// the last -inf; one max, an exp a lane, the probabilities parked in the
// scratch row; the sums (2 vectors of V's head dim) reloaded times the
// rescale take a whole span in two sets of accumulators (alternate keys),
// the last span key by key.
// CHECK-LABEL: func.func @decode
// CHECK: %[[SCRATCH:.*]] = memref.alloc() : memref<16x1x8xf32>
// CHECK: scf.parallel (%[[N:.*]]) = (%c0) to (%c16) step (%c1) {
// CHECK: scf.for %[[J0:.*]] = %c0 to %c40 step %c8 iter_args
// CHECK: %[[K1:.*]] = arith.minui %{{.*}}, %c39 : index
// CHECK: %[[DOTS:.*]]:4 = scf.for %[[D:.*]] = %c0 to %c8 step %c4 iter_args
// CHECK: %[[Q:.*]] = vector.load %arg0[%[[N]], %c0, %[[D]]]
// CHECK: vector.load %arg1[%[[N]], %[[K1]], %[[D]]]
// CHECK-COUNT-4: vector.fma %[[Q]]
// CHECK: vector.shuffle %[[DOTS]]#0, %[[DOTS]]#2 [2, 3, 6, 7]
// CHECK: vector.shuffle %[[DOTS]]#0, %[[DOTS]]#2 [0, 1, 4, 5]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [1, 5, 3, 7]
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 4, 2, 6]
// CHECK: %[[SCORES:.*]] = arith.addf
// CHECK: arith.mulf %[[SCORES]], %cst_1
// CHECK: arith.cmpi ult, %{{.*}}, %cst_0 : vector<4xindex>
// CHECK: vector.reduction <maximumf>
// CHECK: math.exp %{{.*}} : vector<4xf32>
// CHECK: vector.store %{{.*}}, %[[SCRATCH]][%[[N]], %c0, %c0]
// CHECK: vector.reduction <add>
// CHECK: %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c8 : index
// CHECK: scf.if %[[WHOLE]]
// CHECK: %[[P1:.*]] = memref.load %[[SCRATCH]][%[[N]], %c0, %c1]
// CHECK: %[[P1S:.*]] = vector.broadcast %[[P1]]
// CHECK: vector.fma %[[P1S]], %{{.*}}, %cst_2
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1 iter_args
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NOT: kiln_kernel.attention
func.func @decode(%q: memref<16x1x8xf32>, %k: memref<16x40x8xf32>, %v: memref<16x40x8xf32>,
                  %out: memref<16x1x8xf32>, %acc: memref<16x1x8xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<16x1x8xf32>, memref<16x40x8xf32>, memref<16x40x8xf32>)
      outs(%out, %acc : memref<16x1x8xf32>, memref<16x1x8xf32>) {scale = 0.35 : f64}
  return
}

// -----

// A head dim that is not a multiple of the lanes stays with
// kiln-attention-to-loops.
// CHECK-LABEL: func.func @odd_depth
// CHECK-NOT: scf.parallel
// CHECK: kiln_kernel.attention
func.func @odd_depth(%q: memref<16x1x6xf32>, %k: memref<16x40x6xf32>, %v: memref<16x40x8xf32>,
                     %out: memref<16x1x8xf32>, %acc: memref<16x1x8xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<16x1x6xf32>, memref<16x40x6xf32>, memref<16x40x8xf32>)
      outs(%out, %acc : memref<16x1x8xf32>, memref<16x1x8xf32>) {scale = 0.35 : f64}
  return
}
