// RUN: kiln-opt %s --kiln-cpu-entry="entry=compute" | FileCheck %s
// RUN: not kiln-opt %s --kiln-cpu-entry="entry=missing" 2>&1 | FileCheck %s --check-prefix=MISSING

// The packed entry loads one data pointer per argument and rebuilds the
// descriptor from the static shape: sizes [2, 3], strides [3, 1].
// CHECK: func.func @_kiln_entry(%[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[SLOT0:.*]] = llvm.getelementptr %[[ARGS]][0]
// CHECK: llvm.load %[[SLOT0]] : !llvm.ptr -> !llvm.ptr
// CHECK-DAG: llvm.mlir.constant(3 : i64)
// CHECK-DAG: llvm.mlir.constant(2 : i64)
// CHECK: %[[SLOT1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: call @compute(%{{.*}}, %{{.*}}) : (memref<2x3xf32>, memref<6xi8>) -> ()
// MISSING: error: no entry function 'missing'
func.func @compute(%a: memref<2x3xf32>, %b: memref<6xi8>) {
  return
}
