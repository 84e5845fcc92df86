// RUN: kiln-opt %s --kiln-cpu-entry="entry=compute" | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-entry="entry=dynamic" | FileCheck %s --check-prefix=DYN
// RUN: not kiln-opt %s --kiln-cpu-entry="entry=missing" 2>&1 | FileCheck %s --check-prefix=MISSING

// The packed entry loads one data pointer per argument and rebuilds the
// descriptor from the static shape: sizes [2, 3], strides [3, 1]; the
// sizes array is not read.
// CHECK: func.func @_kiln_entry(%[[ARGS:.*]]: !llvm.ptr, %[[SIZES:.*]]: !llvm.ptr)
// CHECK-NOT: %[[SIZES]]
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[ARGS]][0]
// CHECK: llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK-DAG: llvm.mlir.constant(3 : i64)
// CHECK-DAG: llvm.mlir.constant(2 : i64)
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: call @compute(%{{.*}}, %{{.*}}) : (memref<2x3xf32>, memref<6xi8>) -> ()
func.func @compute(%a: memref<2x3xf32>, %b: memref<6xi8>) {
  return
}

// `?` dims come from the sizes array, which lists every dim of every
// argument: %x's dim 0 is sizes[0], %y's dim 1 is sizes[2 + 1]; the stride
// of %x's dim 0 is the run-time size of its dim 1 (here static 4).
// DYN: func.func @_kiln_entry(%[[ARGS:.*]]: !llvm.ptr, %[[SIZES:.*]]: !llvm.ptr)
// DYN: %[[S0:.*]] = llvm.getelementptr %[[SIZES]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// DYN: llvm.load %[[S0]] : !llvm.ptr -> i64
// DYN: %[[S3:.*]] = llvm.getelementptr %[[SIZES]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// DYN: llvm.load %[[S3]] : !llvm.ptr -> i64
// DYN: call @dynamic(%{{.*}}, %{{.*}}) : (memref<?x4xf32>, memref<8x?xf32>) -> ()
func.func @dynamic(%x: memref<?x4xf32>, %y: memref<8x?xf32>) {
  return
}
// MISSING: error: no entry function 'missing'
