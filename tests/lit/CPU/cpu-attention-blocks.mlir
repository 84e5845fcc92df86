// RUN: kiln-opt %s --kiln-cpu-attention-blocks=vector-width=4 --canonicalize --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-attention-blocks="vector-width=16 bf16-dot-products=true" --canonicalize --split-input-file | FileCheck %s --check-prefix=PAIRS

// bf16, causal, 10 query rows and 7 keys, 4 lanes (AVX2-like: blocks of 4
// rows and 3 vectors of keys): K packed transposed into f32 [2, 8, 12]
// (keys rounded up to 12, zeros past the 7th) by a parallel loop over
// (batch, key blocks); then a task per (batch, block of 4 rows). A whole
// block stops at the keys its last row sees (min(7, first + 4)) and takes
// 12 keys a step: each row's scores as 3 vectors along the keys, q
// broadcast; scaled, keys past the row's (causal) masked to -inf; the
// block's max across lanes; p = exp(s - m), its sum across lanes; p rounded
// to bf16 parked in the scratch; each vector of sums reloaded times the
// rescale factor and updated from V, p broadcast from the scratch (12 keys
// unrolled, or a loop over the last block's keys). The 2 rows left over
// run one at a time. out = acc / total, as bf16.
// CHECK-LABEL: func.func @causal_bf16
// CHECK-NOT: kiln_kernel.attention
// CHECK: %[[KT:.*]] = memref.alloc() : memref<2x8x12xf32>
// CHECK: scf.parallel (%[[PN:.*]]) = (%c0) to (%c2)
// CHECK: scf.for %[[PJ:.*]] = %c0 to %c12 step %c1
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[PJ]], %c7
// CHECK: %[[AT:.*]] = arith.minui %[[PJ]], %c6
// CHECK: scf.for %[[PD:.*]] = %c0 to %c8 step %c1
// CHECK: vector.load %arg1[%[[PN]], %[[AT]], %[[PD]]] : memref<2x7x8xbf16>, vector<1xbf16>
// CHECK: arith.extf
// CHECK: arith.select %[[INSIDE]]
// CHECK: vector.store %{{.*}}, %[[KT]][%[[PN]], %[[PD]], %[[PJ]]] : memref<2x8x12xf32>, vector<1xf32>
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: %[[P:.*]] = memref.alloc() : memref<2x3x4x12xf32>
// CHECK: scf.parallel (%[[N:.*]], %[[B:.*]]) = (%c0, %c0) to (%c2, %c3)
// CHECK: %[[FIRST:.*]] = arith.muli %[[B]], %c4
// CHECK: %[[PAST:.*]] = arith.addi %[[FIRST]], %c4
// CHECK: %[[WHOLE:.*]] = arith.cmpi ule, %[[PAST]], %c10
// CHECK: scf.if %[[WHOLE]]
// CHECK-COUNT-4: vector.store %{{.*}}, %arg4[%[[N]], {{.*}}] : memref<2x10x4xf32>, vector<4xf32>
// CHECK: %[[END:.*]] = arith.minui %{{.*}}, %c7
// CHECK: scf.for %[[J:.*]] = %c0 to %[[END]] step %c12 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: scf.for %[[D:.*]] = %c0 to %c8 step %c1 iter_args({{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK: %[[K0:.*]] = vector.load %[[KT]][%[[N]], %[[D]], %[[J]]] : memref<2x8x12xf32>, vector<4xf32>
// CHECK: %[[J4:.*]] = arith.addi %[[J]], %c4
// CHECK: %[[K1:.*]] = vector.load %[[KT]][%[[N]], %[[D]], %[[J4]]]
// CHECK: %[[J8:.*]] = arith.addi %[[J]], %c8
// CHECK: %[[K2:.*]] = vector.load %[[KT]][%[[N]], %[[D]], %[[J8]]]
// CHECK: memref.load %arg0[%[[N]], %[[FIRST]], %[[D]]] : memref<2x10x8xbf16>
// CHECK: %[[Q:.*]] = vector.broadcast
// CHECK: vector.fma %[[Q]], %[[K0]]
// CHECK: vector.fma %[[Q]], %[[K1]]
// CHECK: vector.fma %[[Q]], %[[K2]]
// CHECK-COUNT-9: vector.fma
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : vector<4xf32>
// CHECK: arith.cmpi ult, %{{.*}} : vector<4xindex>
// CHECK: arith.select %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK: arith.maximumf %{{.*}} : vector<4xf32>
// CHECK: arith.maximumf %{{.*}} : vector<4xf32>
// CHECK: vector.reduction <maximumf>
// CHECK: arith.maximumf %{{.*}} : f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: math.exp %{{.*}} : vector<4xf32>
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: vector.store %{{.*}}, %[[P]][%[[N]], %[[B]], %c0, %c0]
// CHECK: vector.store %{{.*}}, %[[P]][%[[N]], %[[B]], %c0, %c4]
// CHECK: vector.store %{{.*}}, %[[P]][%[[N]], %[[B]], %c0, %c8]
// CHECK: vector.reduction <add>
// CHECK: %[[SEEN:.*]] = arith.minui %{{.*}}, %c12
// CHECK: vector.load %arg4[%[[N]], %[[FIRST]], %c0] : memref<2x10x4xf32>, vector<4xf32>
// CHECK: arith.mulf
// CHECK: %[[ALL:.*]] = arith.cmpi eq, %[[SEEN]], %c12
// CHECK: scf.if %[[ALL]] -> (vector<4xf32>, vector<4xf32>, vector<4xf32>, vector<4xf32>)
// CHECK: vector.load %arg2[%[[N]], %[[J]], %c0] : memref<2x7x4xbf16>, vector<4xbf16>
// CHECK: memref.load %[[P]][%[[N]], %[[B]], %c0, %c0]
// CHECK: vector.fma
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0 to %[[SEEN]] step %c1
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// CHECK: vector.store %{{.*}}, %arg3[%[[N]], %[[FIRST]], %c0] : memref<2x10x4xbf16>, vector<4xbf16>
// CHECK: } else {
// CHECK: scf.for %[[I:.*]] = %[[FIRST]] to %c10 step %c1
// CHECK: vector.store %{{.*}}, %arg4[%[[N]], %[[I]], %c0]
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: memref.dealloc %[[P]]
// CHECK: memref.dealloc %[[KT]]
func.func @causal_bf16(%q: memref<2x10x8xbf16>, %k: memref<2x7x8xbf16>, %v: memref<2x7x4xbf16>,
                       %out: memref<2x10x4xbf16>, %acc: memref<2x10x4xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<2x10x8xbf16>, memref<2x7x8xbf16>, memref<2x7x4xbf16>)
      outs(%out, %acc : memref<2x10x4xbf16>, memref<2x10x4xf32>) {causal, scale = 0.35 : f64}
  return
}

// -----

// A boolean mask of size 1 in its batch and row dims: a block's lanes read
// it at [0, 0, key], the keys past the last clamped to it (they are masked
// anyway); false gives -inf. Run-time lengths: the packing's and the
// blocks' bounds are memref.dims, and the blocks run where there are 4
// query rows or more; fewer (a decode step) the rows kernel
// (cpu-attention-rows.mlir).
// CHECK-LABEL: func.func @bool_mask_run_time
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c1
// CHECK: %[[ENOUGH:.*]] = arith.cmpi uge, %[[ROWS]], %c4
// CHECK: scf.if %[[ENOUGH]] {
// CHECK: %[[KEYS:.*]] = memref.dim %arg1, %c1
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c12
// CHECK: %[[LAST:.*]] = arith.subi %[[KEYS]], %c1
// CHECK: %[[AT:.*]] = arith.minui %{{.*}}, %[[LAST]]
// CHECK: memref.load %arg3[%c0, %c0, %[[AT]]] : memref<1x1x?xi1>
// CHECK: %[[BITS:.*]] = vector.from_elements {{.*}} : vector<4xi1>
// CHECK: arith.select %[[BITS]], %{{.*}}, %cst
// CHECK: } else {
// CHECK: vector.shuffle
// CHECK: } {kiln.min_task_size = 1 : index}
// CHECK-NOT: kiln_kernel.attention
// CHECK: return
func.func @bool_mask_run_time(%q: memref<3x?x16xf32>, %k: memref<3x?x16xf32>, %v: memref<3x?x8xf32>,
                              %mask: memref<1x1x?xi1>, %out: memref<3x?x8xf32>, %acc: memref<3x?x8xf32>) {
  kiln_kernel.attention ins(%q, %k, %v mask %mask : memref<3x?x16xf32>, memref<3x?x16xf32>, memref<3x?x8xf32>, memref<1x1x?xi1>)
      outs(%out, %acc : memref<3x?x8xf32>, memref<3x?x8xf32>) {scale = 0.25 : f64}
  return
}

// -----

// Left to kiln-attention-to-loops: f64 sums; V's head dim (6) not a
// multiple of the lanes.
// CHECK-LABEL: func.func @f64
// CHECK: kiln_kernel.attention
// CHECK-LABEL: func.func @odd_head_dim
// CHECK: kiln_kernel.attention
func.func @f64(%q: memref<1x4x8xf64>, %k: memref<1x4x8xf64>, %v: memref<1x4x8xf64>,
               %out: memref<1x4x8xf64>, %acc: memref<1x4x8xf64>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<1x4x8xf64>, memref<1x4x8xf64>, memref<1x4x8xf64>)
      outs(%out, %acc : memref<1x4x8xf64>, memref<1x4x8xf64>) {scale = 0.35 : f64}
  return
}
func.func @odd_head_dim(%q: memref<1x4x8xf32>, %k: memref<1x4x8xf32>, %v: memref<1x4x6xf32>,
                        %out: memref<1x4x6xf32>, %acc: memref<1x4x6xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<1x4x8xf32>, memref<1x4x8xf32>, memref<1x4x6xf32>)
      outs(%out, %acc : memref<1x4x6xf32>, memref<1x4x6xf32>) {scale = 0.35 : f64}
  return
}
// -----

// With AVX512-BF16 (bf16-dot-products), 16 lanes, bf16 products are
// vdpbf16ps dot products of pairs: K packed as pairs of the head dim
// (kt[n, d / 2, 2 j + d % 2], bf16 [1, 2, 96] for 40 keys rounded up to a
// span of 48), V as pairs of keys (vt[n, j / 2, 2 w + j % 2], bf16 [1, 24,
// 32], two key rows interleaved), the probabilities parked as bf16; q and
// the probabilities broadcast a 32-bit pair at a time; the sums take every
// span whole (p is 0 past the last key, vt zeros). f16 keeps f32 FMAs.
// PAIRS-LABEL: func.func @bf16_pairs
// PAIRS: %[[KT:.*]] = memref.alloc() : memref<1x2x96xbf16>
// PAIRS: vector.load %arg1[{{.*}}] : memref<1x40x4xbf16>, vector<2xbf16>
// PAIRS: vector.store %{{.*}}, %[[KT]][{{.*}}] : memref<1x2x96xbf16>, vector<2xbf16>
// PAIRS: %[[VT:.*]] = memref.alloc() : memref<1x24x32xbf16>
// PAIRS: vector.interleave %{{.*}}, %{{.*}} : vector<16xbf16> -> vector<32xbf16>
// PAIRS: %[[P:.*]] = memref.alloc() : memref<1x3x8x48xbf16>
// PAIRS: vector.load %[[KT]][{{.*}}] : memref<1x2x96xbf16>, vector<32xbf16>
// PAIRS: vector.load %arg0[{{.*}}] : memref<1x20x4xbf16>, vector<2xbf16>
// PAIRS: vector.bitcast %{{.*}} : vector<16xi32> to vector<32xbf16>
// PAIRS-COUNT-3: x86vector.avx512.dot
// PAIRS: vector.store %{{.*}}, %[[P]][{{.*}}] : memref<1x3x8x48xbf16>, vector<16xbf16>
// PAIRS: vector.load %[[VT]][{{.*}}] : memref<1x24x32xbf16>, vector<32xbf16>
// PAIRS-NEXT: vector.load %[[P]][{{.*}}] : memref<1x3x8x48xbf16>, vector<2xbf16>
// PAIRS: x86vector.avx512.dot
// PAIRS: memref.dealloc %[[VT]]
// PAIRS: memref.alloc() : memref<1x4x48xf32>
// PAIRS-NOT: x86vector
// PAIRS: return
func.func @bf16_pairs(%q: memref<1x20x4xbf16>, %k: memref<1x40x4xbf16>, %v: memref<1x40x16xbf16>,
                      %out: memref<1x20x16xbf16>, %acc: memref<1x20x16xf32>,
                      %qh: memref<1x20x4xf16>, %kh: memref<1x40x4xf16>, %vh: memref<1x40x16xf16>,
                      %outh: memref<1x20x16xf16>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<1x20x4xbf16>, memref<1x40x4xbf16>, memref<1x40x16xbf16>)
      outs(%out, %acc : memref<1x20x16xbf16>, memref<1x20x16xf32>) {scale = 0.5 : f64}
  kiln_kernel.attention ins(%qh, %kh, %vh : memref<1x20x4xf16>, memref<1x40x4xf16>, memref<1x40x16xf16>)
      outs(%outh, %acc : memref<1x20x16xf16>, memref<1x20x16xf32>) {scale = 0.5 : f64}
  return
}
