// RUN: kiln-opt %s --split-input-file --kiln-verify-program | FileCheck %s
// `?` dims: verifiers check what is known and defer the rest to run time.

// A `?` against a static n != 1 is n (checked at run time); against a
// static 1 it stays `?`; two `?` dims are one run-time size.
// CHECK-LABEL: func.func @broadcasting
// CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
// CHECK: kiln.mul %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
// CHECK: kiln.sub %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
func.func @broadcasting(%x: tensor<?x4xf32>, %y: tensor<5x4xf32>, %o: tensor<1x4xf32>,
                        %c: tensor<?x1xf32>) -> tensor<?x4xf32> {
  %a = kiln.add %x, %y : (tensor<?x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
  %m = kiln.mul %x, %o : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  %s = kiln.sub %m, %c : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  return %s : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @rows
// CHECK: kiln.reduce_sum %{{.*}} {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
// CHECK: kiln.softmax %{{.*}} {dim = 1 : i64} : tensor<?x?xf32>
// CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<?x?xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
// CHECK: kiln.layer_norm
func.func @rows(%x: tensor<?x?xf32>, %w: tensor<?x8xf32>, %g: tensor<8xf32>)
    -> (tensor<?xf32>, tensor<?x8xf32>) {
  %r = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<?x?xf32> -> tensor<?xf32>
  %s = kiln.softmax %x {dim = 1} : tensor<?x?xf32>
  %m = kiln.matmul %s, %w : (tensor<?x?xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %n = kiln.layer_norm %m, %g, %g : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %r, %n : tensor<?xf32>, tensor<?x8xf32>
}

// -----

// gather's index may be shorter than x but in `dim`; a `?` size on either
// side is checked at run time.
// CHECK-LABEL: func @gather_of_run_time_rows
func.func @gather_of_run_time_rows(%x: tensor<?x40xf32>, %i: tensor<3x2xi32>) -> tensor<3x2xf32> {
  %0 = kiln.gather %x, %i {dim = 1} : (tensor<?x40xf32>, tensor<3x2xi32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// A conv's `?` channels are its weights' (checked at run time); `?` image
// sizes give `?` output sizes, static ones static.
// CHECK-LABEL: func.func @conv_image_sizes
// CHECK: kiln.conv2d %{{.*}}, %{{.*}} {padding = array<i64: 1, 1>} : (tensor<?x?x?x9xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x9xf32>
// CHECK: kiln.max_pool2d %{{.*}} {kernel = array<i64: 2, 2>} : tensor<?x8x?x9xf32> -> tensor<?x8x?x4xf32>
func.func @conv_image_sizes(%x: tensor<?x?x?x9xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<?x8x?x4xf32> {
  %c = kiln.conv2d %x, %w {padding = array<i64: 1, 1>} : (tensor<?x?x?x9xf32>, tensor<8x4x3x3xf32>) -> tensor<?x8x?x9xf32>
  %m = kiln.max_pool2d %c {kernel = array<i64: 2, 2>} : tensor<?x8x?x9xf32> -> tensor<?x8x?x4xf32>
  return %m : tensor<?x8x?x4xf32>
}

// -----

// concat: off the concatenated dim a `?` is the other operand's static size
// (it gave "expected -9223372036854775808" before); along it a `?` term
// makes the sum `?`.
// CHECK-LABEL: func.func @concat_of_run_time_sizes
// CHECK: kiln.concat %{{.*}}, %{{.*}} {dim = 1 : i64} : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
// CHECK: kiln.concat %{{.*}}, %{{.*}} {dim = 0 : i64} : (tensor<8x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @concat_of_run_time_sizes(%x: tensor<?x4xf32>, %y: tensor<8x4xf32>)
    -> (tensor<8x8xf32>, tensor<?x4xf32>) {
  %a = kiln.concat %x, %y {dim = 1} : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
  %b = kiln.concat %y, %x {dim = 0} : (tensor<8x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %a, %b : tensor<8x8xf32>, tensor<?x4xf32>
}
