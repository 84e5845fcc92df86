// A Vulkan kernel cannot compute f64 transcendentals: a clear error.
// RUN: not kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-prepare-kernels))" 2>&1 | FileCheck %s --check-prefix=F64
// F64: f64 'math.exp' is not supported on Vulkan
gpu.module @f64 {
  gpu.func @exp(%in: memref<4xf64>) kernel
      attributes {known_block_size = array<i32: 4, 1, 1>} {
    %t = gpu.thread_id x
    %x = memref.load %in[%t] : memref<4xf64>
    %e = math.exp %x : f64
    memref.store %e, %in[%t] : memref<4xf64>
    gpu.return
  }
}
