// RUN: kiln-opt %s --kiln-gpu-row-reductions=hoist-row-values=true --split-input-file | FileCheck %s

// One block per row (4 x 5 = 20 rows), 256 threads striding over the row
// 4 floats (16 aligned bytes) at a time, gpu.all_reduce across them, thread 0
// stores. Rows longer than 32 elements per thread loop (shorter ones stay in
// registers: gpu-row-reductions-one-pass.mlir).
// CHECK-LABEL: func @rowsum
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c20, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: scf.for %{{.*}} = %{{.*}} to %c30000 step %c1024 {{.*}} -> (vector<4xf32>)
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<4x5x30000xf32>, vector<4xf32>
// CHECK: math.exp %{{.*}} : vector<4xf32>
// CHECK: vector.reduction <add>
// CHECK: gpu.all_reduce add %{{.*}} uniform
// CHECK: scf.if
// CHECK: memref.store
func.func @rowsum(%x: memref<4x5x30000xf32>, %out: memref<4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : memref<4x5x30000xf32>) outs(%out : memref<4x5xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %e = math.exp %a : f32
    %0 = arith.addf %e, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Rows that are not whole vectors load one element at a time.
// CHECK-LABEL: func @rowmax
// CHECK: scf.for %{{.*}} = %{{.*}} to %c30001 step %c256{{.*}} -> (f32)
// CHECK: memref.load
// CHECK: gpu.all_reduce maximumf
func.func @rowmax(%x: memref<4x30001xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x30001xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// f64 (not a 32-bit shuffle) keeps the generic lowering.
// CHECK-LABEL: func @f64
// CHECK: linalg.generic
func.func @f64(%x: memref<4x300xf64>, %out: memref<4xf64>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x300xf64>) outs(%out : memref<4xf64>) {
  ^bb0(%a: f64, %acc: f64):
    %0 = arith.maximumf %a, %acc : f64
    linalg.yield %0 : f64
  }
  return
}

// -----

// softmax's fill, row max, fill, sum of exp and normalise over the same rows
// are one kernel. Every thread holds the all-reduces' results, so the
// row's max and sum pass to later stages in registers: no barrier between
// stages, no loads of them, and the temporaries that held them go. What
// depends only on the row (1 / its sum) is computed once, before the loop
// over the row.
// CHECK-LABEL: func @softmax
// CHECK-NOT: memref.alloc
// CHECK-COUNT-1: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: %[[MAX:.*]] = gpu.all_reduce maximumf
// CHECK-NOT: gpu.barrier
// CHECK-NOT: memref.load
// CHECK: vector.broadcast %[[MAX]]
// CHECK: scf.for
// CHECK: %[[SUM:.*]] = gpu.all_reduce add
// CHECK-NOT: gpu.barrier
// CHECK: %[[ROWSUM:.*]] = arith.addf %[[SUM]]
// CHECK: vector.broadcast %[[ROWSUM]]
// CHECK: arith.divf %{{.*}} : vector<4xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: arith.divf
// CHECK: arith.mulf
// CHECK: vector.store
// CHECK-NOT: linalg.generic
func.func @softmax(%x: memref<8x16384xf32>, %out: memref<8x16384xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<8xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x16384xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<8x16384xf32>, memref<8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %0 = arith.subf %a, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %acc fastmath<reassoc> : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %s : memref<8x16384xf32>, memref<8xf32>, memref<8xf32>) outs(%out : memref<8x16384xf32>) {
  ^bb0(%a: f32, %mx: f32, %sum: f32, %o: f32):
    %0 = arith.subf %a, %mx : f32
    %1 = math.exp %0 : f32
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %sum : f32
    %2 = arith.mulf %1, %r : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// layer_norm's rows, too long for registers (20000 f32 over 256 threads):
// every stage loops over the row. The centred row (x - mean), which the
// variance and the output read, is computed again from x in their loops
// instead of going through a temporary as large as x, which goes.
// CHECK-LABEL: func @centred_long_rows
// CHECK-NOT: memref.alloc() : memref<4x20000xf32>
// CHECK: gpu.launch
// CHECK: gpu.all_reduce add
// CHECK: scf.for
// CHECK: vector.load %arg0
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: gpu.all_reduce add
// CHECK: scf.for
// CHECK: vector.load %arg0
// CHECK: arith.subf
// CHECK: vector.store {{.*}}, %arg1
// CHECK-NOT: memref.alloc() : memref<4x20000xf32>
func.func @centred_long_rows(%x: memref<4x20000xf32>, %out: memref<4x20000xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 2.0e+04 : f32
  %mean = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%mean : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x20000xf32>) outs(%mean : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  %c = memref.alloc() : memref<4x20000xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %mean : memref<4x20000xf32>, memref<4xf32>) outs(%c : memref<4x20000xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %0 = arith.divf %s, %n : f32
    %1 = arith.subf %a, %0 : f32
    linalg.yield %1 : f32
  }
  %var = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%var : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%c : memref<4x20000xf32>) outs(%var : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.mulf %a, %a : f32
    %1 = arith.addf %0, %acc fastmath<reassoc> : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c, %var : memref<4x20000xf32>, memref<4xf32>) outs(%out : memref<4x20000xf32>) {
  ^bb0(%a: f32, %v: f32, %o: f32):
    %0 = arith.divf %v, %n : f32
    %1 = math.rsqrt %0 : f32
    %2 = arith.mulf %a, %1 : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// A stage that would read another row of what an earlier stage wrote stays
// out of the kernel (other blocks write other rows).
// CHECK-LABEL: func @other_row
// CHECK: gpu.launch
// CHECK: linalg.generic
func.func @other_row(%x: memref<8x8xf32>, %out: memref<8x8xf32>) {
  %m = memref.alloc() : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x8xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<8x8xf32>, memref<8xf32>) outs(%out : memref<8x8xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %0 = arith.subf %a, %mx : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A reduction that reads a row-wise op's output through a view at an
// offset (another thread's, or another row's, elements) does not take that
// op as its first stage: it would read them with no barrier between.
// CHECK-LABEL: func @offset_view_of_the_first_stage
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel"]
// CHECK: memref.subview
// CHECK: gpu.launch
// CHECK-NOT: arith.negf
// CHECK: gpu.terminator
func.func @offset_view_of_the_first_stage(%x: memref<33xf16>, %out: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<33xf16>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<33xf16>) outs(%t : memref<33xf16>) {
  ^bb0(%a: f16, %o: f16):
    %0 = arith.negf %a : f16
    linalg.yield %0 : f16
  }
  %v = memref.subview %t[32] [1] [3] : memref<33xf16> to memref<1xf16, strided<[3], offset: 32>>
  linalg.fill ins(%zero : f32) outs(%out : memref<f32>)
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%v : memref<1xf16, strided<[3], offset: 32>>) outs(%out : memref<f32>) {
  ^bb0(%a: f16, %acc: f32):
    %0 = arith.extf %a : f16 to f32
    %1 = arith.addf %0, %acc fastmath<reassoc> : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// The same for a later stage: the row-wise op reading the reduction's
// input through a view one row on stays out of the kernel.
// CHECK-LABEL: func @offset_view_in_a_later_stage
// CHECK: gpu.launch
// CHECK: gpu.terminator
// CHECK: linalg.generic
func.func @offset_view_in_a_later_stage(%x: memref<9x8xf32>, %out: memref<8x8xf32>) {
  %e = memref.alloc() : memref<9x8xf32>
  %m = memref.alloc() : memref<8xf32>
  %xs = memref.subview %x[0, 0] [8, 8] [1, 1] : memref<9x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  %es = memref.subview %e[0, 0] [8, 8] [1, 1] : memref<9x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  %next = memref.subview %e[1, 0] [8, 8] [1, 1] : memref<9x8xf32> to memref<8x8xf32, strided<[8, 1], offset: 8>>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%xs : memref<8x8xf32, strided<[8, 1]>>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xs, %m : memref<8x8xf32, strided<[8, 1]>>, memref<8xf32>) outs(%es : memref<8x8xf32, strided<[8, 1]>>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %0 = arith.subf %a, %mx : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%next : memref<8x8xf32, strided<[8, 1], offset: 8>>) outs(%out : memref<8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = math.exp %a : f32
    linalg.yield %0 : f32
  }
  return
}
