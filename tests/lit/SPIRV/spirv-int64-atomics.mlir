// RUN: kiln-opt %s --split-input-file --pass-pipeline='builtin.module(spirv.module(kiln-spirv-int64-atomics))' | FileCheck %s

// An i64 OpAtomicIAdd needs Int64Atomics, which spirv-update-vce leaves
// out (spirv-val: "64-bit atomics require the Int64Atomics capability").
// CHECK-LABEL: spirv.module @counts
// CHECK-SAME: #spirv.vce<v1.3, [Shader, Int64, Int64Atomics], [SPV_KHR_storage_buffer_storage_class]>
spirv.module @counts Logical GLSL450 requires #spirv.vce<v1.3, [Shader, Int64], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.func @add(%p: !spirv.ptr<i64, StorageBuffer>, %v: i64) "None" {
    %0 = spirv.AtomicIAdd <Device> <AcquireRelease> %p, %v : !spirv.ptr<i64, StorageBuffer>
    spirv.Return
  }
}

// -----

// A 32-bit one needs nothing more.
// CHECK-LABEL: spirv.module @counts32
// CHECK-SAME: #spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>
spirv.module @counts32 Logical GLSL450 requires #spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.func @add(%p: !spirv.ptr<i32, StorageBuffer>, %v: i32) "None" {
    %0 = spirv.AtomicIAdd <Device> <AcquireRelease> %p, %v : !spirv.ptr<i32, StorageBuffer>
    spirv.Return
  }
}
