// RUN: kiln-opt %s --kiln-gpu-row-reductions --cse --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-row-reductions=run-time-sizes=true --cse --split-input-file | FileCheck %s --check-prefix=VECTORS

// A softmax over rows of 2048 f32 (256 threads x 4 lanes: two chunks per
// thread) reads each row once: the max stage loads x, the sum and
// normalise stages reuse those registers, and CSE leaves one exp per chunk
// and one division per row. The row's max and sum reach later stages in
// registers (every thread holds an all-reduce's result): no barriers
// between stages.
// CHECK-LABEL: func @softmax
// CHECK-COUNT-1: gpu.launch
// CHECK-NOT: scf.for
// CHECK-COUNT-2: vector.load %arg0
// CHECK-NOT: vector.load %arg0
// CHECK: gpu.all_reduce maximumf
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-2: math.exp
// CHECK-NOT: math.exp
// CHECK: gpu.all_reduce add
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-1: arith.divf
// CHECK-NOT: arith.divf
// CHECK-COUNT-2: vector.store {{.*}}, %arg1
// CHECK-NOT: linalg.generic
func.func @softmax(%x: memref<8x2048xf32>, %out: memref<8x2048xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc() : memref<8xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x2048xf32>) outs(%m : memref<8xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  %s = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<8xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %m : memref<8x2048xf32>, memref<8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%a: f32, %mx: f32, %acc: f32):
    %0 = arith.subf %a, %mx : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %acc fastmath<reassoc> : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %s : memref<8x2048xf32>, memref<8xf32>, memref<8xf32>) outs(%out : memref<8x2048xf32>) {
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

// A row that ends inside the threads' last chunk (1100 = 1024 + 76 f32:
// 256 threads x 4 lanes) masks that chunk: its load yields zeros past the end and the
// reduction keeps its partial there.
// CHECK-LABEL: func @ragged
// CHECK: %[[J:.*]] = arith.muli %{{.*}}, %c4
// CHECK: vector.load %arg0
// CHECK-NOT: vector.load %arg0
// CHECK: %[[J1:.*]] = arith.addi %[[J]], %c1024
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[J1]], %c1100
// CHECK: scf.if %[[IN]] -> (vector<4xf32>)
// CHECK: vector.load
// CHECK: } else {
// CHECK: scf.yield %cst
// CHECK: %[[KEEP:.*]] = vector.broadcast %[[IN]] : i1 to vector<4xi1>
// CHECK: arith.select %[[KEEP]]
// CHECK: gpu.all_reduce add
func.func @ragged(%x: memref<4x1100xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x1100xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A stage that rewrites a buffer in place hands what it stored to later
// stages in registers: each thread reads back only the elements it wrote
// itself, so neither the write (after another stage read them) nor the
// read needs a barrier. A row's value that only thread 0 has (a reduction
// into a buffer not filled in the kernel) is read from memory after one.
// CHECK-LABEL: func @rewritten
// CHECK: vector.load %arg1
// CHECK-NOT: gpu.barrier
// CHECK: %[[SQ:.*]] = arith.mulf
// CHECK-NEXT: vector.store %[[SQ]], %arg1
// CHECK-NOT: vector.load %arg1
// CHECK-NOT: gpu.barrier
// CHECK: arith.addf %{{.*}}, %[[SQ]]
// CHECK: gpu.all_reduce add
// CHECK: memref.store {{.*}}, %arg3
// CHECK: gpu.barrier
// CHECK-NEXT: memref.load %arg3
func.func @rewritten(%x: memref<4x1024xf32>, %y: memref<4x1024xf32>, %out: memref<4xf32>, %out2: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : memref<4x1024xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x1024xf32>) outs(%y : memref<4x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : memref<4x1024xf32>) outs(%out2 : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %out2 : memref<4x1024xf32>, memref<4xf32>) outs(%y : memref<4x1024xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %0 = arith.mulf %a, %s : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A row-wise op right before a reduction's fill (a widening of f16 rows)
// is the kernel's first stage: the reduction takes the widened rows from
// registers and the f32 temporary goes.
// CHECK-LABEL: func @widened_rows
// CHECK-NOT: memref.alloc
// CHECK-COUNT-1: gpu.launch
// CHECK: vector.load %arg0{{.*}} : memref<4x1024xf16>, vector<4xf16>
// CHECK: arith.extf
// CHECK-NOT: vector.store
// CHECK: gpu.all_reduce add
// CHECK-NOT: linalg.generic
func.func @widened_rows(%x: memref<4x1024xf16>, %out: memref<4xf32>) {
  %wide = memref.alloc() : memref<4x1024xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x1024xf16>) outs(%wide : memref<4x1024xf32>) {
  ^bb0(%a: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    linalg.yield %0 : f32
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<4xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%wide : memref<4x1024xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// A fill between them that stays outside the kernel (of another buffer)
// keeps the row-wise op outside too: inside, it would run after the fill.
// CHECK-LABEL: func @fill_between
// CHECK: linalg.generic
// CHECK: linalg.fill
// CHECK: gpu.launch
func.func @fill_between(%x: memref<4x1024xf32>, %y: memref<4x1024xf32>, %out: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<4x1024xf32>) outs(%y : memref<4x1024xf32>) {
  ^bb0(%a: f32, %o: f32):
    %0 = arith.mulf %a, %a : f32
    linalg.yield %0 : f32
  }
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%x : memref<4x1024xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%y : memref<4x1024xf32>) outs(%out : memref<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Rows of run-time length: each thread's first 32 elements as masked
// chunks (held in registers between stages), then a loop over the rest of
// the row. The loops over the rows' tails compute the exponentials again
// from the row instead of reading them back: their temporary, which
// nothing reads any more, goes with its stores (no buffer the size of the
// input, no round trip through memory).
// CHECK-LABEL: func @run_time_rows
// CHECK-NOT: memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf32>
// CHECK: gpu.launch
// CHECK-COUNT-32: memref.load %arg0
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK: gpu.all_reduce maximumf
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK: math.exp
// CHECK: gpu.all_reduce add
// CHECK: scf.for
// CHECK: memref.load %arg0
// CHECK: math.exp
// CHECK: memref.store {{.*}}, %arg1
// With run-time-sizes (CUDA), three variants of the kernel, built alike
// and launched by the run's row length (the others' grids are empty):
// rows a multiple of 4 long and of 8192 or more (every thread's 8 chunks of
// 4 lanes full) read 16 bytes at a time without masks, then loop over the
// rest; shorter rows a multiple of 4 long the same with masked chunks;
// other lengths scalar. No temporary in any of the three.
// VECTORS-LABEL: func @run_time_rows
// VECTORS-NOT: memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf32>
// VECTORS: %[[REST:.*]] = arith.remsi %[[N:.*]], %c4
// VECTORS: %[[SHORT:.*]] = arith.cmpi slt, %[[N]], %c8192
// VECTORS: %[[SHORT1:.*]] = arith.select %[[SHORT]], %c1, %c0
// VECTORS: %[[LONG:.*]] = arith.cmpi sge, %[[N]], %c8192
// VECTORS: %[[LONG1:.*]] = arith.select %[[LONG]], %c1, %c0
// VECTORS: %[[FULLMISFIT:.*]] = arith.addi %[[REST]], %[[SHORT1]]
// VECTORS: %[[FULL:.*]] = arith.cmpi eq, %[[FULLMISFIT]], %c0
// VECTORS: %[[ROWS:.*]] = arith.select %[[FULL]], %{{.*}}, %c0
// VECTORS: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[ROWS]],
// VECTORS-NOT: scf.if
// VECTORS-COUNT-8: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// VECTORS: scf.for
// VECTORS: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// VECTORS: gpu.all_reduce maximumf
// VECTORS: scf.for
// VECTORS: math.exp {{.*}} : vector<4xf32>
// VECTORS: %[[MASKEDMISFIT:.*]] = arith.addi %[[REST]], %[[LONG1]]
// VECTORS: %[[MASKED:.*]] = arith.cmpi eq, %[[MASKEDMISFIT]], %c0
// VECTORS: %[[ROWS2:.*]] = arith.select %[[MASKED]], %{{.*}}, %c0
// VECTORS: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[ROWS2]],
// VECTORS-COUNT-8: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x?xf32>, vector<4xf32>
// VECTORS: gpu.all_reduce maximumf
// VECTORS: %[[RAGGED:.*]] = arith.cmpi sgt, %[[REST]], %c0
// VECTORS: %[[ROWS3:.*]] = arith.select %[[RAGGED]], %{{.*}}, %c0
// VECTORS: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %[[ROWS3]],
// VECTORS-NOT: vector.load
// VECTORS-COUNT-32: memref.load %arg0
// VECTORS-NOT: vector.load
// VECTORS: gpu.all_reduce maximumf
// VECTORS: scf.for
// VECTORS: math.exp {{.*}} : f32
// VECTORS: return
func.func @run_time_rows(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = memref.dim %x, %c0 : memref<?x?xf32>
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m = memref.alloc(%r) : memref<?xf32>
  linalg.fill ins(%ninf : f32) outs(%m : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x?xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  %e = memref.alloc(%r, %n) : memref<?x?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<?x?xf32>, memref<?xf32>) outs(%e : memref<?x?xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %0 = arith.subf %a, %mx : f32
    %1 = math.exp %0 : f32
    linalg.yield %1 : f32
  }
  %s = memref.alloc(%r) : memref<?xf32>
  linalg.fill ins(%zero : f32) outs(%s : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%e : memref<?x?xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %2 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%e, %s : memref<?x?xf32>, memref<?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %sum: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %r2 = arith.divf %one, %sum : f32
    %2 = arith.mulf %a, %r2 : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// Index arithmetic on sizes between them (rows of run-time length) keeps
// the row-wise op pending: it touches no memory. The fill of the
// reduction's init joins as well, though its `?` size is another value's
// than the rows' (it was a kernel of its own, a launch more per run).
// CHECK-LABEL: func @widened_rows_of_run_time_length
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK: memref.store %cst, %arg1
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill
func.func @widened_rows_of_run_time_length(%x: memref<?x?xf16>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = memref.dim %x, %c0 : memref<?x?xf16>
  %n = memref.dim %x, %c1 : memref<?x?xf16>
  %wide = memref.alloc(%r, %n) : memref<?x?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : memref<?x?xf16>) outs(%wide : memref<?x?xf32>) {
  ^bb0(%a: f16, %o: f32):
    %0 = arith.extf %a : f16 to f32
    linalg.yield %0 : f32
  }
  %r2 = memref.dim %wide, %c0 : memref<?x?xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<?xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%wide : memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
