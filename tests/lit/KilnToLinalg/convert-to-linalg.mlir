// RUN: kiln-opt %s --kiln-convert-to-linalg --split-input-file --verify-diagnostics | FileCheck %s

// Broadcasting elementwise ops become generics with broadcast index maps;
// unsigned types become signless in the signature.
// CHECK: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @add
// CHECK-SAME: (%{{.*}}: tensor<4x3xi8>, %{{.*}}: tensor<3xi8>) -> tensor<4x3xi8>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addi
func.func @add(%a: tensor<4x3xui8>, %b: tensor<3xui8>) -> tensor<4x3xui8> {
  %0 = kiln.add %a, %b : (tensor<4x3xui8>, tensor<3xui8>) -> tensor<4x3xui8>
  return %0 : tensor<4x3xui8>
}

// -----

// Unsigned division picks the unsigned op and guards a zero divisor.
// CHECK-LABEL: func @udiv
// CHECK: arith.cmpi eq
// CHECK: arith.divui
// CHECK-NOT: arith.divsi
func.func @udiv(%a: tensor<8xui32>, %b: tensor<8xui32>) -> tensor<8xui32> {
  %0 = kiln.div %a, %b : (tensor<8xui32>, tensor<8xui32>) -> tensor<8xui32>
  return %0 : tensor<8xui32>
}

// -----

// f16 reductions accumulate in f32 and round once at the end.
// CHECK-LABEL: func @sum_f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.fill ins(%{{.*}} : f32)
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf {{.*}} fastmath<reassoc> : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @sum_f16(%x: tensor<4x8xf16>) -> tensor<4xf16> {
  %0 = kiln.reduce_sum %x {dims = array<i64: 1>} : tensor<4x8xf16> -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Matmul of f16 into f32 uses linalg.matmul on an f32 accumulator.
// CHECK-LABEL: func @mm
// CHECK: linalg.matmul {{.*}} ins(%{{.*}}, %{{.*}} : tensor<8x16xf16>, tensor<16x4xf16>) outs(%{{.*}} : tensor<8x4xf32>)
func.func @mm(%a: tensor<8x16xf16>, %b: tensor<16x4xf16>) -> tensor<8x4xf32> {
  %0 = kiln.matmul %a, %b : (tensor<8x16xf16>, tensor<16x4xf16>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Transpose is an index map, so it can fuse with its neighbours.
// CHECK: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func @transpose
// CHECK: linalg.generic {indexing_maps = [#[[T]], #{{.*}}]
func.func @transpose(%x: tensor<3x5xf32>) -> tensor<5x3xf32> {
  %0 = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<3x5xf32> -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

// f64 and wide ints reach bf16 through the f32 rounded to odd (next to the
// value toward zero, last bit set where inexact), so that the f32 -> bf16
// rounding is the only one. An int keeps its top 24 bits (counted by the
// exponent of its nearest f32) with the rest as a sticky bit, without f64
// (Vulkan devices may lack it). Widening bf16 -> f64 is exact as it is.
// CHECK-LABEL: func @casts_through_f32
// CHECK: %[[NEAREST:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.extf %[[NEAREST]] : f32 to f64
// CHECK: arith.bitcast %[[NEAREST]] : f32 to i32
// CHECK: arith.subi
// CHECK: arith.ori
// CHECK: %[[ODD:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.truncf %[[ODD]] : f32 to bf16
// CHECK-NOT: f64
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.constant 150 : i32
// CHECK: arith.shrsi %{{.*}} : i32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK-NOT: f64
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK: arith.shrsi %{{.*}} : i64
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.extf %{{.*}} : bf16 to f64
// CHECK-NOT: arith.truncf %{{.*}} : f64 to bf16
func.func @casts_through_f32(%x: tensor<4xf64>, %i: tensor<4xi32>, %l: tensor<4xi64>, %h: tensor<4xbf16>)
    -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xf64>) {
  %0 = kiln.cast %x : tensor<4xf64> -> tensor<4xbf16>
  %1 = kiln.cast %i : tensor<4xi32> -> tensor<4xbf16>
  %2 = kiln.cast %l : tensor<4xi64> -> tensor<4xbf16>
  %3 = kiln.cast %h : tensor<4xbf16> -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xf64>
}

// -----

// f8 tensors are bit patterns in kernels: a cast decodes them to f32 exactly.
// CHECK-LABEL: func @f8_cast
// CHECK-SAME: (%{{.*}}: tensor<4xi8>) -> tensor<4xf32>
// CHECK: arith.extui %{{.*}} : i8 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @f8_cast(%x: tensor<4xf8E5M2>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf8E5M2> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A slice without elements is an empty tensor (x[3:] of 3 elements: the
// offset 3 fails tensor.extract_slice's verifier); a concat's input without
// elements is not inserted (at the end, its offset fails insert_slice's).
// CHECK-LABEL: func.func @empty_slice_and_concat_input
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[E:.*]] = tensor.empty() : tensor<0x4xf32>
// CHECK: %[[R:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[I:.*]] = tensor.insert_slice %arg0 into %[[R]][0, 0] [2, 4] [1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[E]], %[[I]]
func.func @empty_slice_and_concat_input(%x: tensor<2x4xf32>, %y: tensor<0x4xf32>) -> (tensor<0x4xf32>, tensor<2x4xf32>) {
  %s = kiln.slice %x {start = array<i64: 2, 0>, stop = array<i64: 2, 4>} : tensor<2x4xf32> -> tensor<0x4xf32>
  %c = kiln.concat %x, %y {dim = 0} : (tensor<2x4xf32>, tensor<0x4xf32>) -> tensor<2x4xf32>
  return %s, %c : tensor<0x4xf32>, tensor<2x4xf32>
}
