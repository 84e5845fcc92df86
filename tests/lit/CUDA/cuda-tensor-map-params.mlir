// RUN: kiln-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(gpu.module(kiln-cuda-tensor-map-params))' | FileCheck %s

// The pointer TMA reads is the 128-byte map by value, a grid constant; the
// other pointer (a buffer) and a device function's pointer stay as they are.
// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %{{.*}}: !llvm.ptr<3>)
// CHECK-LABEL: llvm.func @helper
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr<3>)
// CHECK-NOT: grid_constant
module attributes {gpu.container_module} {
gpu.module @kernels {
  llvm.func @kernel(%out: !llvm.ptr, %map: !llvm.ptr, %smem: !llvm.ptr<3>) attributes {nvvm.kernel} {
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %f = llvm.mlir.constant(1.0 : f32) : f32
    %dst = llvm.addrspacecast %smem : !llvm.ptr<3> to !llvm.ptr<7>
    nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %map, %smem, box[%c0, %c0] : !llvm.ptr<7>, !llvm.ptr
    llvm.store %f, %out : f32, !llvm.ptr
    llvm.return
  }
  llvm.func @helper(%map: !llvm.ptr, %smem: !llvm.ptr<3>) {
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %dst = llvm.addrspacecast %smem : !llvm.ptr<3> to !llvm.ptr<7>
    nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %map, %smem, box[%c0] : !llvm.ptr<7>, !llvm.ptr
    llvm.return
  }
}
}

// -----

// A map is only TMA's: a pointer also loaded from is no map.
module attributes {gpu.container_module} {
gpu.module @kernels {
  // expected-error @+1 {{kernel parameter 0 is a tensor map for TMA and also read otherwise}}
  llvm.func @kernel(%map: !llvm.ptr, %smem: !llvm.ptr<3>) attributes {nvvm.kernel} {
    %c0 = llvm.mlir.constant(0 : i32) : i32
    %dst = llvm.addrspacecast %smem : !llvm.ptr<3> to !llvm.ptr<7>
    nvvm.cp.async.bulk.tensor.shared.cluster.global %dst, %map, %smem, box[%c0] : !llvm.ptr<7>, !llvm.ptr
    %v = llvm.load %map : !llvm.ptr -> f32
    llvm.return
  }
}
}
