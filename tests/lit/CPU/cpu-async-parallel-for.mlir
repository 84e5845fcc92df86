// RUN: kiln-opt %s --kiln-cpu-async-parallel-for="num-worker-threads=2 min-task-size=1024" | FileCheck %s

// Four iterations: with kiln.min_task_size = 1 they run as four blocks of
// one (three dispatched to the pool, one by the caller); without it, the
// default minimum of 1024 makes one block of all four on the caller.
// CHECK-LABEL: func @sized
// CHECK: async.create_group %c3
// CHECK: call @[[FN:.*]](%{{.*}}, %c1, %c4,
// CHECK-LABEL: func @unsized
// CHECK: async.create_group %c0
// CHECK: call @[[FN:.*]](%{{.*}}, %c4, %c4,
// CHECK-LABEL: func @vectorized
// Scalar loop bodies' functions stay calls (LLVM inlined them into the
// tasks' coroutines, where loops of run-time bounds were not vectorised);
// a body kiln-vectorize vectorised stays inlinable.
// CHECK-DAG: func.func private @parallel_compute_fn{{.*}}: memref<4xf32>) attributes {passthrough = ["noinline"]}
// CHECK-DAG: func.func private @parallel_compute_fn{{.*}}: memref<4xf32>) attributes {passthrough = ["noinline"]}
// CHECK-DAG: func.func private @parallel_compute_fn{{.*}}: memref<64xf32>) {
func.func @sized(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %out[%i] : memref<4xf32>
    scf.reduce
  } {kiln.min_task_size = 1 : index}
  return
}

func.func @unsized(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %out[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

func.func @vectorized(%out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %ones = arith.constant dense<1.0> : vector<16xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c16) {
    vector.store %ones, %out[%i] : memref<64xf32>, vector<16xf32>
    scf.reduce
  }
  return
}
