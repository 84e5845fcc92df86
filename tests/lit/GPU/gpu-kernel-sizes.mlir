// RUN: kiln-opt %s --kiln-gpu-kernel-sizes --split-input-file --verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-kernel-sizes="flat-size=1024" --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=CUDA

// A buffer of run-time size is passed flat, its `?` dim as a scalar after
// every buffer; accesses are linearised with the static inner dim (4).
// CHECK-LABEL: func @main
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[\[}}0, 1]] : memref<?x4xf32> into memref<?xf32>
// CHECK: %[[Y:.*]] = memref.collapse_shape %arg1 {{\[\[}}0, 1]] : memref<?x4xf32> into memref<?xf32>
// CHECK: %[[D0:.*]] = memref.dim %arg0, %c0
// CHECK: %[[D1:.*]] = memref.dim %arg1, %c0
// CHECK: gpu.launch_func @k::@k {{.*}} args(%[[X]] : memref<?xf32>, %[[Y]] : memref<?xf32>, %arg2 : index, %[[D0]] : index, %[[D1]] : index)
// CHECK: gpu.func @k(%[[FX:.*]]: memref<?xf32>, %[[FY:.*]]: memref<?xf32>, %[[N:.*]]: index, %[[R:.*]]: index, %{{.*}}: index) kernel
// CHECK: %[[ROW:.*]] = arith.muli %block_id_x, %c4
// CHECK: %[[AT:.*]] = arith.addi %[[ROW]], %c3
// CHECK: memref.load %[[FX]][%[[AT]]] : memref<?xf32>
// CHECK: arith.addi %[[R]], %[[N]]
// CHECK: memref.store %{{.*}}, %[[FY]][%{{.*}}] : memref<?xf32>
// CUDA: memref.cast %{{.*}} : memref<?xf32> to memref<1024xf32>
// CUDA: gpu.func @k(%{{.*}}: memref<1024xf32>, %{{.*}}: memref<1024xf32>, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index) kernel
module attributes {gpu.container_module} {
  func.func @main(%x: memref<?x4xf32>, %y: memref<?x4xf32>, %n: index) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@k blocks in (%n, %c1, %c1) threads in (%c1, %c1, %c1) args(%n : index, %x : memref<?x4xf32>, %y : memref<?x4xf32>)
    return
  }
  gpu.module @k {
    gpu.func @k(%n: index, %x: memref<?x4xf32>, %y: memref<?x4xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %i = gpu.block_id x
      %v = memref.load %x[%i, %c3] : memref<?x4xf32>
      %rows = memref.dim %x, %c0 : memref<?x4xf32>
      %j = arith.addi %rows, %n : index
      memref.store %v, %y[%i, %j] : memref<?x4xf32>
      gpu.return
    }
  }
}

// -----

// A use other than an access or memref.dim is an error, not a wrong kernel.
module attributes {gpu.container_module} {
  func.func @main(%x: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @k::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<?xf32>)
    return
  }
  gpu.module @k {
    gpu.func @k(%x: memref<?xf32>) kernel {
      %c0 = arith.constant 0 : index
      %c2 = arith.constant 2 : index
      // expected-error @+1 {{kiln-gpu-kernel-sizes: cannot run 'memref.subview' on a buffer of run-time size ('memref<?xf32>')}}
      %s = memref.subview %x[%c0] [%c2] [1] : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
      gpu.return
    }
  }
}
