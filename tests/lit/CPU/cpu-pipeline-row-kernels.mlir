// RUN: kiln-opt %s --kiln-to-cpu-llvm --mlir-print-ir-after=kiln-cpu-row-kernels 2>&1 >/dev/null | FileCheck %s

// In the CPU pipeline a softmax reaches kiln-cpu-row-kernels as a chain
// it takes: one loop over the rows, its statistics on the stack, its
// exponentials written into the result's row and divided there.
// CHECK-LABEL: func.func @main
// CHECK-NOT: memref.alloc(
// CHECK: scf.parallel
// CHECK: llvm.intr.stacksave
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<f32>
// CHECK: %[[OUT:.*]] = memref.subview %arg1[%{{.*}}, 0] [1, 256] [1, 1]
// CHECK-NOT: memref.alloca() {{.*}} : memref<256xf32>
// CHECK: math.exp
// CHECK: iterator_types = ["reduction"]} ins(%[[OUT]]
// CHECK: llvm.intr.stackrestore
// CHECK: } {kiln.min_task_size = 1 : index}
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %s = kiln.softmax %x {dim = 1} : tensor<64x256xf32>
  return %s : tensor<64x256xf32>
}
