// RUN: kiln-opt %s --kiln-convert-to-linalg | FileCheck %s
// RUN: kiln-opt %s --kiln-convert-to-linalg="attention-fusion=none" | FileCheck %s --check-prefix=UNFUSED
// RUN: kiln-opt %s --kiln-convert-to-linalg="attention-fusion=tensor-cores" | FileCheck %s --check-prefix=TC

// conv2d: the weights permuted to [G, Og, KH, KW, Cg]; the input made
// channels last and padded ([N, H + 2ph, W + 2pw, G, Cg]) by one generic
// (kiln.conv_image: kernel formation keeps it whole) that reads x where
// its index is inside the image (a read under scf.if: an image of no rows
// has nothing to read) and yields 0 around it; each image's window
// patches (im2col, [N, G, KH, KW, Cg, OH, OW]: K ordered (kh, kw, c), so a
// window's channels are contiguous) multiplied by the weights per image and
// group (f16 into f32; the weights of each group copied per image); the
// product is NCHW as it stands, and the epilogue adds the bias and rounds
// in place.
// CHECK-DAG: #[[WPERM:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d2, d3)>
// CHECK-DAG: #[[PATCH:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d5 * 2 + d2, d6 * 2 + d3 * 2, d1, d4)>
// CHECK-DAG: #[[SAME:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[SHARED:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-DAG: #[[PX:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 * 2 + d3, d2 * 2 + d4)>
// CHECK-DAG: #[[WINDOW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3, d4)>
// CHECK-DAG: #[[TAPX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-LABEL: func @conv
// CHECK: linalg.generic {indexing_maps = [#[[WPERM]], #{{.*}}], {{.*}} ins(%{{.*}} : tensor<2x3x2x3x2xf16>) outs(%{{.*}} : tensor<2x3x3x2x2xf16>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x9x6x2x2xf16>) attrs = {kiln.conv_image}
// CHECK: %[[ROW:.*]] = linalg.index 1
// CHECK: %[[Y:.*]] = arith.subi %[[ROW]], %c1
// CHECK: %[[COL:.*]] = linalg.index 2
// CHECK: %[[Z:.*]] = arith.subi %[[COL]], %c0
// CHECK: %[[C:.*]] = arith.addi
// CHECK: %[[N:.*]] = linalg.index 0
// CHECK: %[[V:.*]] = scf.if %{{.*}} -> (f16) {
// CHECK: tensor.extract %arg0[%[[N]], %[[C]], %[[Y]], %[[Z]]] : tensor<1x4x7x6xf16>
// CHECK: } else {
// CHECK: linalg.yield %[[V]] : f16
// CHECK: linalg.generic {indexing_maps = [#[[PATCH]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<1x9x6x2x2xf16>) outs(%{{.*}} : tensor<1x2x3x2x2x4x2xf16>)
// CHECK: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x12xf16>, tensor<2x12x8xf16>) outs(%{{.*}} : tensor<2x3x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[SAME]], #[[BIAS]], #[[SAME]]], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x6x8xf32>, tensor<6xf16>) outs(%{{.*}} : tensor<1x6x8xf16>)
// CHECK: arith.addf
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @conv(%x: tensor<1x4x7x6xf16>, %w: tensor<6x2x3x2xf16>, %b: tensor<6xf16>) -> tensor<1x6x4x2xf16> {
  %r = kiln.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 2>, groups = 2 : i64} : (tensor<1x4x7x6xf16>, tensor<6x2x3x2xf16>, tensor<6xf16>) -> tensor<1x6x4x2xf16>
  return %r : tensor<1x6x4x2xf16>
}

// One group: the weights are one [O, KH*KW*C] matrix that every image's
// patches [KH*KW*C, OH*OW] share (a batch_matmul without a batch dim on
// its left operand), no copy of them per image. The patches come right
// before the matmul (a GPU kernel gathers them instead of copying).
// CHECK-LABEL: func @conv_one_group
// CHECK: linalg.generic {indexing_maps = [#[[PATCH]], #{{.*}}], {{.*}} outs(%{{.*}} : tensor<3x1x3x2x4x4x2xf32>)
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul indexing_maps = [#[[SHARED]], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<5x24xf32>, tensor<3x24x8xf32>) outs(%{{.*}} : tensor<3x5x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[SAME]], #[[SAME]]], {{.*}} ins(%{{.*}} : tensor<3x5x8xf32>) outs(%{{.*}} : tensor<3x5x8xf32>)
func.func @conv_one_group(%x: tensor<3x4x7x6xf32>, %w: tensor<5x4x3x2xf32>) -> tensor<3x5x4x2xf32> {
  %r = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 0>, dilation = array<i64: 1, 2>} : (tensor<3x4x7x6xf32>, tensor<5x4x3x2xf32>) -> tensor<3x5x4x2xf32>
  return %r : tensor<3x5x4x2xf32>
}

// A 1x1 stride-1 conv multiplies the (padded) input itself: no im2col.
// CHECK-LABEL: func @pointwise
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul indexing_maps = [#[[SHARED]], {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x4xf16>, tensor<2x4x63xf16>) outs(%{{.*}} : tensor<2x8x63xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[SAME]], #[[BIAS]], #[[SAME]]]
func.func @pointwise(%x: tensor<2x4x7x9xf16>, %w: tensor<8x4x1x1xf16>, %b: tensor<8xf16>) -> tensor<2x8x7x9xf16> {
  %r = kiln.conv2d %x, %w, %b : (tensor<2x4x7x9xf16>, tensor<8x4x1x1xf16>, tensor<8xf16>) -> tensor<2x8x7x9xf16>
  return %r : tensor<2x8x7x9xf16>
}

// Depthwise (one output channel per group): one generic with (c, kh, kw)
// as reductions over the output, no GEMM.
// CHECK-LABEL: func @depthwise
// CHECK-NOT: linalg.batch_matmul
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x4x1x7x6xf32>, tensor<4x1x1x3x3xf32>) outs(%{{.*}} : tensor<2x4x1x5x4xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.batch_matmul
func.func @depthwise(%x: tensor<2x4x7x6xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<2x4x5x4xf32> {
  %r = kiln.conv2d %x, %w {groups = 4 : i64} : (tensor<2x4x7x6xf32>, tensor<4x1x3x3xf32>) -> tensor<2x4x5x4xf32>
  return %r : tensor<2x4x5x4xf32>
}

// max_pool2d pads with -inf and reduces with NaN-propagating maximumf; a
// [KH, KW] operand gives the window dims their range.
// CHECK-LABEL: func @max_pool
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<2x9x8xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[PX]], #[[WINDOW]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x9x8xf32>, tensor<3x2xf32>)
// CHECK: arith.maximumf
func.func @max_pool(%x: tensor<2x7x6xf32>) -> tensor<2x4x4xf32> {
  %r = kiln.max_pool2d %x {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x7x6xf32> -> tensor<2x4x4xf32>
  return %r : tensor<2x4x4xf32>
}

// avg_pool2d counts the padding: the sum is divided by the window size.
// CHECK-LABEL: func @avg_pool
// CHECK: arith.addf
// CHECK: %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: arith.divf %{{.*}}, %[[SIX]] : f32
func.func @avg_pool(%x: tensor<2x7x6xf32>) -> tensor<2x4x4xf32> {
  %r = kiln.avg_pool2d %x {kernel = array<i64: 3, 2>, stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : tensor<2x7x6xf32> -> tensor<2x4x4xf32>
  return %r : tensor<2x4x4xf32>
}

// A global pool (an output of one place) reads the input at the window's
// taps alone, a plain reduction for the GPU reduction passes; its sum may
// be reassociated like reduce_sum's.
// CHECK-LABEL: func @global_avg_pool
// CHECK: linalg.generic {indexing_maps = [#[[TAPX]], #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
func.func @global_avg_pool(%x: tensor<2x3x7x7xf32>) -> tensor<2x3x1x1xf32> {
  %r = kiln.avg_pool2d %x {kernel = array<i64: 7, 7>} : tensor<2x3x7x7xf32> -> tensor<2x3x1x1xf32>
  return %r : tensor<2x3x1x1xf32>
}

// attention: one kiln_kernel.attention (1/sqrt(8) as its scale) writing
// an f16 result and f32 scratch. Without fusion: q k^T in f32, scaled by
// 1/sqrt(8), causal positions, softmax, probabilities rounded to f16 for
// the product with v.
// CHECK-LABEL: func @attention
// CHECK-DAG: %[[OUT:.*]] = tensor.empty() : tensor<2x5x4xf16>
// CHECK-DAG: %[[ACC:.*]] = tensor.empty() : tensor<2x5x4xf32>
// CHECK: %[[R:.*]]:2 = kiln_kernel.attention ins(%arg0, %arg1, %arg2 : tensor<2x5x8xf16>, tensor<2x7x8xf16>, tensor<2x7x4xf16>) outs(%[[OUT]], %[[ACC]] : tensor<2x5x4xf16>, tensor<2x5x4xf32>) {causal, scale = 0.3535533905932{{[0-9]*}} : f64}
// CHECK: return %[[R]]#0
// UNFUSED-LABEL: func @attention
// TC-LABEL: func @attention(
// TC-NOT: kiln_kernel.attention
// TC: linalg.batch_matmul
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x5x8xf16>, tensor<2x8x7xf16>) outs(%{{.*}} : tensor<2x5x7xf32>)
// UNFUSED: arith.constant 0.353553385 : f32
// UNFUSED: linalg.index 0
// UNFUSED: linalg.index 1
// UNFUSED: arith.cmpi ule
// UNFUSED: arith.select
// UNFUSED: math.exp
// UNFUSED: arith.truncf {{.*}} : f32 to f16
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x5x7xf16>, tensor<2x7x4xf16>) outs(%{{.*}} : tensor<2x5x4xf32>)
// UNFUSED: arith.truncf {{.*}} : f32 to f16
func.func @attention(%q: tensor<2x5x8xf16>, %k: tensor<2x7x8xf16>, %v: tensor<2x7x4xf16>) -> tensor<2x5x4xf16> {
  %r = kiln.attention %q, %k, %v {causal = true} : (tensor<2x5x8xf16>, tensor<2x7x8xf16>, tensor<2x7x4xf16>) -> tensor<2x5x4xf16>
  return %r : tensor<2x5x4xf16>
}

// f64 attention keeps its scratch in f64 (f32 only below f64).
// CHECK-LABEL: func @attention_f64
// CHECK: kiln_kernel.attention {{.*}} outs(%{{.*}}, %{{.*}} : tensor<2x5x4xf64>, tensor<2x5x4xf64>)
func.func @attention_f64(%q: tensor<2x5x8xf64>, %k: tensor<2x7x8xf64>, %v: tensor<2x7x4xf64>) -> tensor<2x5x4xf64> {
  %r = kiln.attention %q, %k, %v : (tensor<2x5x8xf64>, tensor<2x7x8xf64>, tensor<2x7x4xf64>) -> tensor<2x5x4xf64>
  return %r : tensor<2x5x4xf64>
}

// Batch dims are flattened into one; a [Lq, Lk] mask becomes [1, Lq, Lk].
// CHECK-LABEL: func @attention_4d_mask
// CHECK: tensor.expand_shape {{.*}} into tensor<1x1x4xf32>
// CHECK: tensor.collapse_shape {{.*}} into tensor<3x4x8xf32>
// CHECK: kiln_kernel.attention ins({{.*}} mask {{.*}} : tensor<3x1x8xf32>, tensor<3x4x8xf32>, tensor<3x4x8xf32>, tensor<1x1x4xf32>) {{.*}} {scale = 5.000000e-01 : f64}
// CHECK: tensor.expand_shape {{.*}} into tensor<1x3x1x8xf32>
func.func @attention_4d_mask(%q: tensor<1x3x1x8xf32>, %k: tensor<1x3x4x8xf32>, %m: tensor<1x4xf32>) -> tensor<1x3x1x8xf32> {
  %r = kiln.attention %q, %k, %k, %m {scale = 0.5 : f64} : (tensor<1x3x1x8xf32>, tensor<1x3x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x4xf32>) -> tensor<1x3x1x8xf32>
  return %r : tensor<1x3x1x8xf32>
}

// What CUDA's tensor-core kernel takes (f16/bf16, head dims 64 or 128) is
// fused under attention-fusion=tensor-cores; f32 (above) and head dim 8
// (@attention) are not.
// TC-LABEL: func @attention_4d_mask
// TC-NOT: kiln_kernel.attention
// TC-LABEL: func @attention_tensor_cores
// TC: kiln_kernel.attention ins({{.*}} : tensor<2x9x64xbf16>, tensor<2x13x64xbf16>, tensor<2x13x128xbf16>)
func.func @attention_tensor_cores(%q: tensor<2x9x64xbf16>, %k: tensor<2x13x64xbf16>, %v: tensor<2x13x128xbf16>) -> tensor<2x9x128xbf16> {
  %r = kiln.attention %q, %k, %v : (tensor<2x9x64xbf16>, tensor<2x13x64xbf16>, tensor<2x13x128xbf16>) -> tensor<2x9x128xbf16>
  return %r : tensor<2x9x128xbf16>
}

// Run-time sequence lengths fuse too: static batch dims collapse into one
// (the `?` rows stay a group of their own), the mask's `?` dims are the
// scores' own and its 1 broadcasts; out and acc take q's run-time rows.
// CHECK-LABEL: func @attention_run_time_lengths
// CHECK: tensor.collapse_shape {{.*}} into tensor<6x?x64xbf16>
// CHECK: %[[ROWS:.*]] = tensor.dim %{{.*}}, %c1{{(_[0-9]+)?}} : tensor<6x?x64xbf16>
// CHECK: tensor.empty(%[[ROWS]]) : tensor<6x?x64xbf16>
// CHECK: tensor.empty(%[[ROWS]]) : tensor<6x?x64xf32>
// CHECK: kiln_kernel.attention ins({{.*}} mask {{.*}} : tensor<6x?x64xbf16>, tensor<6x?x64xbf16>, tensor<6x?x64xbf16>, tensor<1x1x?xbf16>)
// CHECK: tensor.expand_shape {{.*}} into tensor<2x3x?x64xbf16>
// TC-LABEL: func @attention_run_time_lengths
// TC: kiln_kernel.attention
// UNFUSED-LABEL: func @attention_run_time_lengths
// UNFUSED-NOT: kiln_kernel.attention
func.func @attention_run_time_lengths(%q: tensor<2x3x?x64xbf16>, %k: tensor<2x3x?x64xbf16>, %m: tensor<1x?xbf16>) -> tensor<2x3x?x64xbf16> {
  %r = kiln.attention %q, %k, %k, %m : (tensor<2x3x?x64xbf16>, tensor<2x3x?x64xbf16>, tensor<2x3x?x64xbf16>, tensor<1x?xbf16>) -> tensor<2x3x?x64xbf16>
  return %r : tensor<2x3x?x64xbf16>
}

// A static mask against `?` lengths gives them its sizes (the run checks
// them): unfused, the scores are [1, 9, 3] and the second product's rows 9,
// cast back to the result's `?` rows.
// UNFUSED-LABEL: func @attention_static_mask_run_time_lengths
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x?x32xf32>, tensor<1x32x?xf32>) outs(%{{.*}} : tensor<1x9x3xf32>)
// UNFUSED: arith.select
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x9x3xf32>, tensor<1x?x32xf32>) outs(%{{.*}} : tensor<1x9x32xf32>)
// UNFUSED: tensor.cast %{{.*}} : tensor<1x9x32xf32> to tensor<1x?x32xf32>
// CHECK-LABEL: func @attention_static_mask_run_time_lengths
// CHECK: kiln_kernel.attention ins({{.*}} mask {{.*}} : tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x9x3xi1>)
func.func @attention_static_mask_run_time_lengths(%q: tensor<1x?x32xf32>, %k: tensor<1x?x32xf32>, %m: tensor<9x3xi1>) -> tensor<1x?x32xf32> {
  %r = kiln.attention %q, %k, %k, %m : (tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>, tensor<9x3xi1>) -> tensor<1x?x32xf32>
  return %r : tensor<1x?x32xf32>
}

// A static batch in the mask ties a `?` batch too.
// UNFUSED-LABEL: func @attention_static_batch_mask
// UNFUSED: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<2x9x3xf32>)
// UNFUSED: linalg.batch_matmul {{.*}} outs(%{{.*}} : tensor<2x9x32xf32>)
// UNFUSED: tensor.cast %{{.*}} : tensor<2x9x32xf32> to tensor<?x?x32xf32>
func.func @attention_static_batch_mask(%q: tensor<?x?x32xf32>, %k: tensor<?x?x32xf32>, %m: tensor<2x9x3xi1>) -> tensor<?x?x32xf32> {
  %r = kiln.attention %q, %k, %k, %m : (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<2x9x3xi1>) -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}

// A `?` batch above static heads (a model's [?, heads, ?, E]): the batch
// dims collapse into one by the groups given ([?, 4] into the `?` batch,
// the rows their own), fused or not, and the result expands back.
// CHECK-LABEL: func @attention_run_time_batch_over_heads
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<?x4x1x?xi1> into tensor<?x1x?xi1>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
// CHECK: kiln_kernel.attention ins({{.*}} mask {{.*}} : tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x1x?xi1>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] {{.*}} : tensor<?x?x32xf32> into tensor<?x4x?x32xf32>
// UNFUSED-LABEL: func @attention_run_time_batch_over_heads
// UNFUSED: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] : tensor<?x4x?x32xf32> into tensor<?x?x32xf32>
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x?x32xf32>, tensor<?x32x?xf32>)
// UNFUSED: linalg.batch_matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x?x?xf32>, tensor<?x?x32xf32>)
// UNFUSED: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2], [3]] {{.*}} : tensor<?x?x32xf32> into tensor<?x4x?x32xf32>
func.func @attention_run_time_batch_over_heads(%q: tensor<?x4x?x32xf32>, %k: tensor<?x4x?x32xf32>, %m: tensor<?x1x1x?xi1>) -> tensor<?x4x?x32xf32> {
  %r = kiln.attention %q, %k, %k, %m {causal = true} : (tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x4x?x32xf32>, tensor<?x1x1x?xi1>) -> tensor<?x4x?x32xf32>
  return %r : tensor<?x4x?x32xf32>
}
