// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-cuda-data-layout))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-cuda-data-layout), gpu-module-to-binary{format=isa})" | FileCheck %s --check-prefix=PTX

// A kernel module gets NVPTX's layout, under which an i64 load is one
// 8-byte access (LLVM's default layout aligns i64 to 4 bytes, and NVPTX
// split the load into two 32-bit ones).
// CHECK: gpu.module @k [#nvvm.target<chip = "sm_90">] attributes {llvm.data_layout = "e-{{.*}}i64:64{{.*}}"}
// PTX: ld.global.b64
// PTX-NOT: ld.global.b32
module attributes {gpu.container_module} {
  gpu.module @k [#nvvm.target<chip = "sm_90">] {
    llvm.func @copy(%in: !llvm.ptr<1>, %out: !llvm.ptr<1>) attributes {gpu.kernel, nvvm.kernel} {
      %v = llvm.load %in : !llvm.ptr<1> -> i64
      llvm.store %v, %out : i64, !llvm.ptr<1>
      llvm.return
    }
  }
}
