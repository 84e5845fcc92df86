// RUN: kiln-opt %s --kiln-to-cpu-llvm --mlir-print-ir-after=kiln-cpu-row-kernels 2>&1 >/dev/null | FileCheck %s

// In the CPU pipeline a softmax reaches kiln-cpu-row-kernels as a chain
// it takes: one loop over the rows, its exponentials a row on the stack.
// CHECK-LABEL: func.func @main
// CHECK: scf.parallel
// CHECK: llvm.intr.stacksave
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<256xf32>
// CHECK-COUNT-2: iterator_types = ["reduction"]
// CHECK: llvm.intr.stackrestore
// CHECK: } {kiln.min_task_size = 1 : index}
func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %s = kiln.softmax %x {dim = 1} : tensor<64x256xf32>
  return %s : tensor<64x256xf32>
}
