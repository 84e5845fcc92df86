// RUN: kiln-opt %s --kiln-cpu-flatten-parallel-loops --canonicalize | FileCheck %s

// A 7x150 loop nest (a matmul accumulating into C) becomes a parallel loop
// of one dim (nothing for async-parallel-for to misalign) around a serial
// loop of 150, tasks of 1024 / 150 rows.
// CHECK-LABEL: func @accumulate
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c7) step (%{{.*}}) {
// CHECK-NOT: arith.remsi
// CHECK: scf.for %{{.*}} = %c0 to %c150
// CHECK: scf.for
// CHECK: kiln.min_task_size = 6 : index
// CHECK-NOT: scf.parallel (%{{.*}}, %{{.*}})
func.func @accumulate(%a: memref<7x16xi32>, %b: memref<16x150xi32>, %c: memref<7x150xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c16 = arith.constant 16 : index
  %c150 = arith.constant 150 : index
  scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c150) step (%c1, %c1) {
    scf.for %k = %c0 to %c16 step %c1 {
      %x = memref.load %a[%i, %k] : memref<7x16xi32>
      %y = memref.load %b[%k, %j] : memref<16x150xi32>
      %z = memref.load %c[%i, %j] : memref<7x150xi32>
      %p = arith.muli %x, %y : i32
      %s = arith.addi %z, %p : i32
      memref.store %s, %c[%i, %j] : memref<7x150xi32>
    }
    scf.reduce
  }
  return
}

// Of nested loops only the level with the most iterations stays parallel:
// here the inner one (4x257) of a reduction over the middle dim of
// 2x2x4x257, its 257 run serially.
// CHECK-LABEL: func @nested
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK-NOT: scf.parallel
// CHECK: scf.for
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4) step
// CHECK: scf.for %{{.*}} = %c0 to %c257
// CHECK-NOT: scf.parallel
func.func @nested(%a: memref<2x2x4x257xi32>, %r: memref<2x4x257xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c257 = arith.constant 257 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    scf.for %k = %c0 to %c2 step %c1 {
      scf.parallel (%j, %l) = (%c0, %c0) to (%c4, %c257) step (%c1, %c1) {
        %x = memref.load %a[%i, %k, %j, %l] : memref<2x2x4x257xi32>
        %y = memref.load %r[%i, %j, %l] : memref<2x4x257xi32>
        %s = arith.addi %x, %y : i32
        memref.store %s, %r[%i, %j, %l] : memref<2x4x257xi32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// Here the outer one (4096 iterations) of a reduction over the middle dim
// of 4096x5x2x3; the inner one (6) runs as scf.for loops.
// CHECK-LABEL: func @nested_outer
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c4096{{.*}}) step
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c5
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2
// CHECK: scf.for %{{.*}} = %{{.*}} to %c3
// CHECK-NOT: scf.parallel
func.func @nested_outer(%a: memref<4096x5x2x3xf32>, %r: memref<4096x2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c4096) step (%c1) {
    scf.for %k = %c0 to %c5 step %c1 {
      scf.parallel (%j, %l) = (%c0, %c0) to (%c2, %c3) step (%c1, %c1) {
        %x = memref.load %a[%i, %k, %j, %l] : memref<4096x5x2x3xf32>
        %y = memref.load %r[%i, %j, %l] : memref<4096x2x3xf32>
        %s = arith.addf %x, %y : f32
        memref.store %s, %r[%i, %j, %l] : memref<4096x2x3xf32>
        scf.reduce
      }
    }
    scf.reduce
  }
  return
}

// An innermost dim of run-time size runs serially inside the others (one
// dim over their product): no division by it on every iteration.
// CHECK-LABEL: func @run_time_rows
// CHECK-SAME: (%{{.*}}: memref<?x?x?xf32>, %[[A:.*]]: index, %[[B:.*]]: index, %[[N:.*]]: index)
// CHECK: %[[ROWS:.*]] = arith.muli %[[A]], %[[B]]
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[ROWS]]) step (%c1)
// CHECK: arith.remsi %[[R]], %[[B]]
// CHECK: scf.for %{{.*}} = %c0 to %[[N]] step %c16
// CHECK-NOT: arith.remsi
// CHECK: memref.store
func.func @run_time_rows(%x: memref<?x?x?xf32>, %a: index, %b: index, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%a, %b, %n) step (%c1, %c1, %c16) {
    memref.store %zero, %x[%i, %j, %k] : memref<?x?x?xf32>
    scf.reduce
  }
  return
}

// Iterations that are tasks of their own (an attention row over all its
// keys: kiln.min_task_size 1) keep a run-time innermost dim parallel: the
// loop collapses whole and keeps its task size (a `?` causal prefill ran on
// one thread when only 16 heads were left parallel).
// CHECK-LABEL: func @heavy_run_time_rows
// CHECK: %[[ROWS:.*]] = arith.muli %{{.*}}, %{{.*}}
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%[[ROWS]]) step (%c1)
// CHECK-NOT: scf.for
// CHECK: memref.store
// CHECK: kiln.min_task_size = 1 : index
func.func @heavy_run_time_rows(%x: memref<16x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c16, %n) step (%c1, %c1) {
    memref.store %zero, %x[%i, %j] : memref<16x?xf32>
    scf.reduce
  } {kiln.min_task_size = 1 : index}
  return
}

// Static innermost dims of 16 iterations or more together (up to a task's
// 1024) run serially too: counters, not a div/rem per element (a conv's
// patch gather); the loop around them takes proportionally fewer
// iterations per task. Fewer, or more, stay in the flattened loop.
// CHECK-LABEL: func @serial_innermost
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%c4096) step (%c1)
// CHECK: arith.remsi %[[R]], %c64
// CHECK: scf.for %{{.*}} = %c0 to %c56 step %c1
// CHECK-NOT: arith.remsi
// CHECK: memref.store
// CHECK: kiln.min_task_size = 18 : index
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c64) step (%c1)
// CHECK: scf.for %{{.*}} = %c0 to %c7 step %c1
// CHECK: scf.for %{{.*}} = %c0 to %c7 step %c1
// CHECK: kiln.min_task_size = 20 : index
// CHECK: scf.parallel (%[[S:.*]]) = (%c0) to (%c6144) step (%c1)
// CHECK-NOT: scf.for
// CHECK: memref.store
// CHECK: scf.parallel (%[[T:.*]]) = (%c0) to (%c8192) step (%c1)
// CHECK-NOT: scf.for
// CHECK: memref.store
func.func @serial_innermost(%x: memref<64x64x56xf32>, %y: memref<64x7x7xf32>,
                            %z: memref<512x3x4xf32>, %w: memref<4x2048xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c7 = arith.constant 7 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %c512 = arith.constant 512 : index
  %c2048 = arith.constant 2048 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c64, %c64, %c56) step (%c1, %c1, %c1) {
    memref.store %zero, %x[%i, %j, %k] : memref<64x64x56xf32>
    scf.reduce
  }
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c64, %c7, %c7) step (%c1, %c1, %c1) {
    memref.store %zero, %y[%i, %j, %k] : memref<64x7x7xf32>
    scf.reduce
  }
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c512, %c3, %c4) step (%c1, %c1, %c1) {
    memref.store %zero, %z[%i, %j, %k] : memref<512x3x4xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c2048) step (%c1, %c1) {
    memref.store %zero, %w[%i, %j] : memref<4x2048xf32>
    scf.reduce
  }
  return
}

// One-dim loops and loops with reductions stay as they are.
// CHECK-LABEL: func @untouched
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c150
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} init
func.func @untouched(%c: memref<150xi32>, %d: memref<7x150xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c150 = arith.constant 150 : index
  %zero = arith.constant 0 : i32
  scf.parallel (%i) = (%c0) to (%c150) step (%c1) {
    memref.store %zero, %c[%i] : memref<150xi32>
    scf.reduce
  }
  %sum = scf.parallel (%i, %j) = (%c0, %c0) to (%c7, %c150) step (%c1, %c1) init (%zero) -> i32 {
    %v = memref.load %d[%i, %j] : memref<7x150xi32>
    scf.reduce(%v : i32) {
    ^bb0(%l: i32, %r: i32):
      %t = arith.addi %l, %r : i32
      scf.reduce.return %t : i32
    }
  }
  return %sum : i32
}

// A loop whose iterations are tasks of their own (kiln-cpu-row-kernels'
// rows) is the level split, though the loops in it have more iterations.
// CHECK-LABEL: func @rows
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%c2) step
// CHECK-NOT: scf.parallel
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4096
// CHECK: kiln.min_task_size = 1 : index
func.func @rows(%a: memref<2x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c4096) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<2x4096xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %a[%i, %j] : memref<2x4096xf32>
      scf.reduce
    }
    scf.reduce
  } {kiln.min_task_size = 1 : index}
  return
}

// A vector body's innermost dim of a few vectors (rows of 56: 4 vectors of
// 16, the last one short) runs serially inside the other dims: the rows'
// indices are recovered once per row, not once per vector, and a task
// takes 1024 / 4 rows. A row of 4096 (256 vectors) stays in the flat loop.
// CHECK-LABEL: func @short_vector_rows
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c512) step (%c1)
// CHECK: scf.for %{{.*}} = %c0 to %c56 step %c16
// CHECK: vector.store
// CHECK: kiln.min_task_size = 256 : index
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c2048) step (%c1)
// CHECK-NOT: scf.for
// CHECK: vector.store
func.func @short_vector_rows(%x: memref<8x64x56xf32>, %y: memref<8x4096xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c56 = arith.constant 56 : index
  %c64 = arith.constant 64 : index
  %c4096 = arith.constant 4096 : index
  %v = arith.constant dense<0.0> : vector<16xf32>
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c8, %c64, %c56) step (%c1, %c1, %c16) {
    vector.store %v, %x[%i, %j, %k] : memref<8x64x56xf32>, vector<16xf32>
    scf.reduce
  }
  scf.parallel (%i, %k) = (%c0, %c0) to (%c8, %c4096) step (%c1, %c16) {
    vector.store %v, %y[%i, %k] : memref<8x4096xf32>, vector<16xf32>
    scf.reduce
  }
  return
}
