// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-cuda-reduction-occupancy))" | FileCheck %s
// RUN: rm -rf %t && kiln-run %examples/softmax.mlir --compile-only --device cuda --chip sm_90a --dump-dir %t > /dev/null
// RUN: cat %t/*/*.ptx | FileCheck %s --check-prefix=PTX
// RUN: rm -rf %t.ln && kiln-run %examples/layer_norm.mlir --compile-only --device cuda --chip sm_90a --dump-dir %t.ln > /dev/null
// RUN: cat %t.ln/*/*.ptx | FileCheck %s --check-prefix=NORM

// A kernel that reduces across its block of 256 threads asks for 4 blocks
// per SM (1024 resident threads: at most 64 registers); one of 128 threads
// for 8.
// CHECK-LABEL: gpu.func @row_sum
// CHECK-SAME: nvvm.minctasm = 4 : i32
// CHECK-LABEL: gpu.func @narrow_blocks
// CHECK-SAME: nvvm.minctasm = 8 : i32
// Blocks of 1024 threads need no hint; f64 values keep their registers;
// kernels without a block-wide reduction are left alone.
// CHECK-LABEL: gpu.func @whole_blocks
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @f64_rows
// CHECK-NOT: minctasm
// CHECK-LABEL: gpu.func @copy
// CHECK-NOT: minctasm

// The row kernel of a softmax carries it into PTX, and its reciprocal of
// the row's sum is approximate (no IEEE slow path's call).
// PTX: .maxntid 256, 1, 1
// PTX-NEXT: .minnctapersm 4
// PTX: rcp.approx.f32
// PTX-NOT: rcp.rn
// A layer_norm's mean and variance (rows of 768) and its 1 / std likewise.
// NORM: .minnctapersm 4
// NORM-COUNT-2: div.approx.f32
// NORM: rsqrt.approx.f32
// NORM-NOT: div.rn
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @row_sum(%m: memref<16xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<16xf32>
      %s = gpu.all_reduce add %x uniform {} : (f32) -> f32
      memref.store %s, %m[%c0] : memref<16xf32>
      gpu.return
    }
    gpu.func @narrow_blocks(%m: memref<16xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<16xf32>
      %s = gpu.all_reduce add %x uniform {} : (f32) -> f32
      memref.store %s, %m[%c0] : memref<16xf32>
      gpu.return
    }
    gpu.func @whole_blocks(%m: memref<16xf32>) kernel attributes {known_block_size = array<i32: 1024, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<16xf32>
      %s = gpu.all_reduce add %x uniform {} : (f32) -> f32
      memref.store %s, %m[%c0] : memref<16xf32>
      gpu.return
    }
    gpu.func @f64_rows(%m: memref<16xf64>, %o: memref<16xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %x = memref.load %m[%c0] : memref<16xf64>
      %y = arith.truncf %x : f64 to f32
      %s = gpu.all_reduce add %y uniform {} : (f32) -> f32
      memref.store %s, %o[%c0] : memref<16xf32>
      gpu.return
    }
    gpu.func @copy(%m: memref<16xf32>) kernel attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %x = memref.load %m[%c0] : memref<16xf32>
      memref.store %x, %m[%c1] : memref<16xf32>
      gpu.return
    }
  }
}
