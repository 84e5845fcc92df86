// RUN: kiln-opt %s --kiln-convert-to-linalg --split-input-file --verify-diagnostics | FileCheck %s
// `?` dims: result tensors take their sizes from the operands (tensor.dim),
// counts are run-time values, and ops outside the slice are named.

// CHECK-LABEL: func @add
// CHECK: %[[D0:.*]] = tensor.dim %arg0, %c0 : tensor<?x?xf32>
// CHECK: %[[D1:.*]] = tensor.dim %arg0, %c1 : tensor<?x?xf32>
// CHECK: tensor.empty(%[[D0]], %[[D1]]) : tensor<?x?xf32>
// CHECK: linalg.generic
func.func @add(%a: tensor<?x?xf32>, %b: tensor<?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.add %a, %b : (tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// The mean divides by the reduced dim's run-time size (a statistic's
// division, which may be approximate: docs/precision.md); keep_dims expands
// with the `?` dim in a group of its own.
// CHECK-LABEL: func @mean
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1 : tensor<?x?xf32>
// CHECK: %[[I:.*]] = arith.index_castui %[[N]] : index to i64
// CHECK: arith.uitofp %[[I]] : i64 to f32
// CHECK: arith.divf %{{.*}} fastmath<afn> : f32
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape
func.func @mean(%x: tensor<?x?xf32>) -> tensor<?x1xf32> {
  %0 = kiln.reduce_mean %x {dims = array<i64: 1>, keep_dims = true} : tensor<?x?xf32> -> tensor<?x1xf32>
  return %0 : tensor<?x1xf32>
}

// -----

// CHECK-LABEL: func @matmul
// CHECK-DAG: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG: %[[N:.*]] = tensor.dim %arg1, %c1
// CHECK: tensor.empty(%[[M]], %[[N]]) : tensor<?x?xf32>
// CHECK: linalg.matmul
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.matmul %a, %b : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// cumsum's loops run to the input's run-time sizes.
// CHECK-LABEL: func @cumsum
// CHECK: %[[ROWS:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1
// CHECK: tensor.empty(%[[ROWS]], %[[N]])
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[ROWS]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
func.func @cumsum(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.cumsum %x {dim = 1} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// flip over a `?` dim reads x at (size - 1 - i) by index; a static flipped
// dim keeps its affine map.
// CHECK-LABEL: func @flip
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c1
// CHECK: linalg.generic {{.*}} outs(
// CHECK: %[[I:.*]] = linalg.index 1
// CHECK: %[[R:.*]] = arith.subi %[[N]], %[[I]]
// CHECK: %[[AT:.*]] = arith.subi %[[R]], %c1
// CHECK: tensor.extract %arg0[%{{.*}}, %[[AT]]]
func.func @flip(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = kiln.flip %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// argmax over a static dim of `?` rows: the outputs take the rows' size.
// CHECK-LABEL: func @argmax
// CHECK: %[[ROWS:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?xf32>
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?xi64>
func.func @argmax(%x: tensor<?x64xf32>) -> tensor<?xi64> {
  %0 = kiln.argmax %x {dim = 1} : tensor<?x64xf32> -> tensor<?xi64>
  return %0 : tensor<?xi64>
}

// -----

// gather's result takes the index's run-time sizes.
// CHECK-LABEL: func @gather
// CHECK: %[[ROWS:.*]] = tensor.dim %arg1, %c0
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?x3xf32>
// CHECK: tensor.extract %arg0
func.func @gather(%x: tensor<?x40xf32>, %i: tensor<?x3xi32>) -> tensor<?x3xf32> {
  %0 = kiln.gather %x, %i {dim = 1} : (tensor<?x40xf32>, tensor<?x3xi32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @argmax_over_run_time_dim(%x: tensor<4x?xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{'kiln.argmax' with dynamic dims ('tensor<4x?xf32>') is not supported yet}}
  %0 = kiln.argmax %x {dim = 1} : tensor<4x?xf32> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A slice of `?` rows reads a static part of them (the run checks there are
// enough).
// CHECK-LABEL: func @slice
// CHECK: tensor.extract_slice %arg0[0, 0] [2, 4] [1, 1] : tensor<?x8xf32> to tensor<2x4xf32>
func.func @slice(%x: tensor<?x8xf32>) -> tensor<2x4xf32> {
  %0 = kiln.slice %x {start = array<i64: 0, 0>, stop = array<i64: 2, 4>} : tensor<?x8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// A concat along `?` dims: the result's size is the sum, each input's
// offset the sum before it.
// CHECK-LABEL: func @concat_run_time_dim
// CHECK: %[[A:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[B:.*]] = tensor.dim %arg1, %c0
// CHECK: %[[SUM:.*]] = arith.addi %[[A]], %[[B]]
// CHECK: tensor.empty(%[[SUM]]) : tensor<?x3xf32>
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 0]
// CHECK: %[[AT:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.insert_slice %arg1 into %{{.*}}[%[[AT]], 0]
func.func @concat_run_time_dim(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = kiln.concat %x, %y {dim = 0} : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// pad leaves a `?` dim unpadded: the filled tensor takes x's size there,
// and x goes in whole.
// CHECK-LABEL: func @pad
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x10xf32>
// CHECK: %[[M:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[0, 1] [%[[M]], 8] [1, 1]
func.func @pad(%x: tensor<?x8xf32>) -> tensor<?x10xf32> {
  %0 = kiln.pad %x {low = array<i64: 0, 1>, high = array<i64: 0, 1>} : tensor<?x8xf32> -> tensor<?x10xf32>
  return %0 : tensor<?x10xf32>
}

// -----

// max_pool2d over `?` images: the accumulator takes the batch from x.
// CHECK-LABEL: func @max_pool
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x3x4x4xf32>
// CHECK: linalg.generic
func.func @max_pool(%x: tensor<?x3x9x9xf32>) -> tensor<?x3x4x4xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>} : tensor<?x3x9x9xf32> -> tensor<?x3x4x4xf32>
  return %0 : tensor<?x3x4x4xf32>
}

// -----

// A `?` dim padded: the filled tensor is 2 longer, x goes in at row 1.
// CHECK-LABEL: func @pad_a_run_time_dim
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[LONGER:.*]] = arith.addi %[[N]], %c2
// CHECK: tensor.empty(%[[LONGER]]) : tensor<?x8xf32>
// CHECK: tensor.insert_slice %arg0 into %{{.*}}[1, 0]
func.func @pad_a_run_time_dim(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = kiln.pad %x {low = array<i64: 1, 0>, high = array<i64: 1, 0>} : tensor<?x8xf32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// A conv over a `?` batch: one weight matrix times each image's patches
// (a batch_matmul whose A has no batch dim); the product's batch is the
// patches', not a dim of the weights (it read the weights' rows once: 64
// images whatever the batch, a heap overrun).
// CHECK-LABEL: func @conv_batch
// CHECK: %[[PATCHES:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3, 4]] : tensor<?x1x64x8x8xf32> into tensor<?x64x64xf32>
// CHECK: %[[WEIGHTS:.*]] = tensor.expand_shape %{{.*}} output_shape [64, 64] : tensor<4096xf32> into tensor<64x64xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[PATCHES]], %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x64x64xf32>
// CHECK: linalg.batch_matmul {{.*}} ins(%[[WEIGHTS]], %[[PATCHES]] : tensor<64x64xf32>, tensor<?x64x64xf32>)
func.func @conv_batch(%x: tensor<?x64x8x8xf32>, %w: tensor<64x64x1x1xf32>) -> tensor<?x64x8x8xf32> {
  %0 = kiln.conv2d %x, %w : (tensor<?x64x8x8xf32>, tensor<64x64x1x1xf32>) -> tensor<?x64x8x8xf32>
  return %0 : tensor<?x64x8x8xf32>
}

// -----

// A `?` K meeting the other operand's static 1: each operand keeps its own
// static matrix dims, and nothing is copied to a `?` size.
// CHECK-LABEL: func @matmul_static_k_meets_run_time_k
// CHECK-NOT: linalg.generic
// CHECK: linalg.batch_matmul {{.*}} ins(%arg0, %arg1 : tensor<?x1x?xf32>, tensor<?x1x?xf32>)
func.func @matmul_static_k_meets_run_time_k(%a: tensor<?x1x?xf32>, %b: tensor<?x1x?xf32>) -> tensor<?x1x?xf32> {
  %0 = kiln.matmul %a, %b : (tensor<?x1x?xf32>, tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
  return %0 : tensor<?x1x?xf32>
}

// -----

// Per-block scales of two `?` dims would reshape two run-time sizes into
// one group.
func.func @quantize_blocks_of_two_run_time_dims(%x: tensor<?x?x64xf32>, %s: tensor<?x?x2xf32>) -> tensor<?x?x64xi8> {
  // expected-error @+1 {{'kiln.quantize' with dynamic dims ('tensor<?x?x64xf32>') is not supported yet}}
  %0 = kiln.quantize %x, %s {block_size = 32} : (tensor<?x?x64xf32>, tensor<?x?x2xf32>) -> tensor<?x?x64xi8>
  return %0 : tensor<?x?x64xi8>
}

// -----

// fill, iota and random of `?` dims: their sizes are the input dims the
// program ties them to (kiln.size_sources, found by the shape class), or
// the static size a dim is tied to; random's counter (the linear index)
// takes the run-time size.
// CHECK-LABEL: func @sized_by_inputs
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[N]]) : tensor<?x4xf32>
// CHECK: linalg.fill
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: %[[M:.*]] = tensor.dim %arg2, %c1
// CHECK: tensor.empty(%[[C3]], %[[M]]) : tensor<?x?xi32>
// CHECK: linalg.index 1
// CHECK: %[[R:.*]] = tensor.dim %arg0, %c0
// CHECK: tensor.empty(%[[R]]) : tensor<?x4xf32>
// CHECK: linalg.generic
// CHECK: arith.muli %{{.*}}, %[[R]] : index
// CHECK-NOT: kiln.size_sources
func.func @sized_by_inputs(%x: tensor<?x4xf32>, %s: tensor<i64>, %w: tensor<3x?xi32>) -> (tensor<?x4xf32>, tensor<3x?xi32>, tensor<?x4xf32>) {
  %z = kiln.fill {value = 2.5 : f64} : tensor<?x4xf32>
  %a = kiln.add %x, %z : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %j = kiln.iota {dim = 1 : i64} : tensor<?x?xi32>
  %e = kiln.add %j, %w : (tensor<?x?xi32>, tensor<3x?xi32>) -> tensor<3x?xi32>
  %u = kiln.random_uniform %s : tensor<i64> -> tensor<?x4xf32>
  %c = kiln.sub %x, %u : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %a, %e, %c : tensor<?x4xf32>, tensor<3x?xi32>, tensor<?x4xf32>
}

// -----

// A fill no input sizes (only reduced) has no run-time size to take.
// expected-error @+1 {{'kiln.fill' makes a tensor<?x4xf32> whose dim 0 no input gives the size of}}
func.func @sized_by_nothing(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<f32>) {
  %z = kiln.fill {value = 2.5 : f64} : tensor<?x4xf32>
  %s = kiln.reduce_sum %z {dims = array<i64: 0, 1>} : tensor<?x4xf32> -> tensor<f32>
  return %x, %s : tensor<?x4xf32>, tensor<f32>
}

// -----

// Images of run-time size: `?` channels are the weights' (a cast: the run
// checks), each spatial output size counts the window's places along x's
// ((H + 2 - 3) / 2 + 1, at least 1: GPU plans are also evaluated at 0),
// and the conv is the GEMM of static images, its patches' two `?` spatial
// dims collapsed into one pixel count and the product expanded back.
// CHECK-LABEL: func @conv_image_sizes
// CHECK: %[[X:.*]] = tensor.cast %arg0 : tensor<?x?x?x?xf32> to tensor<?x4x?x?xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[H:.*]] = tensor.dim %[[X]], %c2
// CHECK: %[[ROOM:.*]] = arith.addi %[[H]], %c-1
// CHECK: %[[FITS:.*]] = arith.maxsi %[[ROOM]], %c0
// CHECK: %[[STEPS:.*]] = arith.divsi %[[FITS]], %c2
// CHECK: %[[OH:.*]] = arith.addi %[[STEPS]], %c1
// CHECK: arith.divsi
// CHECK: %[[OW:.*]] = arith.addi
// CHECK: tensor.empty(%[[N]], %[[OH]], %[[OW]]) : tensor<?x1x3x3x4x?x?xf32>
// CHECK: %[[PATCHES:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3, 4], [5, 6]] : tensor<?x1x3x3x4x?x?xf32> into tensor<?x36x?xf32>
// CHECK: linalg.batch_matmul {{.*}} ins(%{{.*}}, %[[PATCHES]] : tensor<8x36xf32>, tensor<?x36x?xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0], [1], [2, 3]] output_shape [%[[N]], 8, %[[OH]], %[[OW]]] : tensor<?x8x?xf32> into tensor<?x8x?x?xf32>
func.func @conv_image_sizes(%x: tensor<?x?x?x?xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<?x8x?x?xf32> {
  %0 = kiln.conv2d %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<?x?x?x?xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x?xf32>
  return %0 : tensor<?x8x?x?xf32>
}

// -----

// CHECK-LABEL: func @pool_image_sizes
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[H:.*]] = tensor.dim %arg0, %c2
// CHECK: arith.addi %[[H]], %c-2
// CHECK: %[[W:.*]] = tensor.dim %arg0, %c3
// CHECK: arith.addi %[[W]], %c-2
// CHECK: arith.divsi
// CHECK: %[[OW:.*]] = arith.addi
// CHECK: tensor.empty(%[[N]], %{{.*}}, %[[OW]]) : tensor<?x3x?x?xf32>
func.func @pool_image_sizes(%x: tensor<?x3x?x?xf32>) -> tensor<?x3x?x?xf32> {
  %0 = kiln.max_pool2d %x {kernel = array<i64: 2, 2>} : tensor<?x3x?x?xf32> -> tensor<?x3x?x?xf32>
  return %0 : tensor<?x3x?x?xf32>
}

// -----

// Depthwise and grouped convs of `?` images are one generic over the
// output, kept 4-d.
// CHECK-LABEL: func @grouped_image_sizes
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]{{.*}} outs(%{{.*}} : tensor<?x2x2x?x?xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x2x?x?xf32> into tensor<?x4x?x?xf32>
// CHECK-NOT: linalg.batch_matmul
func.func @grouped_image_sizes(%x: tensor<?x4x?x?xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<?x4x?x?xf32> {
  %0 = kiln.conv2d %x, %w {groups = 2} : (tensor<?x4x?x?xf32>, tensor<4x2x3x3xf32>) -> tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}
