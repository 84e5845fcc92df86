// RUN: kiln-opt %s --kiln-cpu-interchange-windows="vector-width=4" --split-input-file | FileCheck %s

// A 3x3 depthwise conv's generic (n, c, oh, ow, kh, kw): ow moves
// innermost, after the taps, its maps and iterators with it.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 + d3, d4 + d5)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func @depthwise
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[W]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
#in = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh + kh, ow + kw)>
#w = affine_map<(n, c, oh, ow, kh, kw) -> (c, kh, kw)>
#out = affine_map<(n, c, oh, ow, kh, kw) -> (n, c, oh, ow)>
func.func @depthwise(%x: memref<2x3x10x10xf32>, %w: memref<3x3x3xf32>, %y: memref<2x3x8x8xf32>) {
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<2x3x10x10xf32>, memref<3x3x3xf32>) outs(%y : memref<2x3x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A pool's stride 2 along ow reads every other element (kiln-vectorize's
// strided reads): ow moves innermost. Stride 5 is past kMaxReadStride and
// a read across rows of the input along ow is no vector: the order stays.
// CHECK-LABEL: func @strides
// CHECK: iterator_types = ["parallel", "reduction", "reduction", "parallel"]
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel", "reduction", "reduction"]
#in = affine_map<(oh, ow, kh, kw) -> (oh + kh, ow * 2 + kw)>
#in5 = affine_map<(oh, ow, kh, kw) -> (oh + kh, ow * 5 + kw)>
#across = affine_map<(oh, ow, kh, kw) -> (ow + kh, oh + kw)>
#k = affine_map<(oh, ow, kh, kw) -> (kh, kw)>
#out = affine_map<(oh, ow, kh, kw) -> (oh, ow)>
func.func @strides(%x: memref<10x18xf32>, %x5: memref<10x38xf32>, %w: memref<3x3xf32>, %y: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#in, #k, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<10x18xf32>, memref<3x3xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#in5, #k, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x5, %w : memref<10x38xf32>, memref<3x3xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#across, #k, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<10x18xf32>, memref<3x3xf32>) outs(%y : memref<8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A sum over the last dim (a row reduction kiln-vectorize takes as it is)
// and taps a vector long or more: the order stays.
// CHECK-LABEL: func @not_windows
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: iterator_types = ["parallel", "parallel", "reduction"]
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
#wide = affine_map<(i, j, k) -> (i, j + k)>
#taps = affine_map<(i, j, k) -> (k)>
#o = affine_map<(i, j, k) -> (i, j)>
func.func @not_windows(%x: memref<8x8xf32>, %s: memref<8xf32>, %y: memref<8x16xf32>, %w: memref<5xf32>, %z: memref<8x12xf32>) {
  linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %acc, %a : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#wide, #taps, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y, %w : memref<8x16xf32>, memref<5xf32>) outs(%z : memref<8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  }
  return
}
