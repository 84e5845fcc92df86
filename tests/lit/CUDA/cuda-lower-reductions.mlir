// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-cuda-lower-reductions))" | FileCheck %s

// CHECK-LABEL: gpu.func @sum
// CHECK-NOT: gpu.all_reduce
// CHECK: gpu.shuffle xor
// CHECK: gpu.barrier
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @sum(%m: memref<16xf32>) kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<16xf32>
      %s = gpu.all_reduce add %x uniform {} : (f32) -> f32
      memref.store %s, %m[%c0] : memref<16xf32>
      gpu.return
    }
  }
}
