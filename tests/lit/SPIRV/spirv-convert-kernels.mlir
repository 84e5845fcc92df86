// RUN: kiln-opt %s --kiln-spirv-convert-kernels | FileCheck %s

// A kernel becomes a spirv.module placed before its gpu.module, which the
// host's launch keeps naming; scatter_add's float atomic add becomes a
// relaxed OpAtomicFAddEXT on the element (the target env allows it), and
// the integer ones upstream's OpAtomicIAdd (i64 where the env has
// Int64Atomics: VK_KHR_shader_atomic_int64).
// CHECK: spirv.module @{{.*}}scatter
// CHECK: spirv.func @scatter
// CHECK: %[[E:.*]] = spirv.AccessChain
// CHECK: spirv.EXT.AtomicFAdd <Device> <None> %[[E]], %{{.*}} : !spirv.ptr<f32, StorageBuffer>
// CHECK: spirv.AtomicIAdd <Device> <AcquireRelease> %{{.*}}, %{{.*}} : !spirv.ptr<i32, StorageBuffer>
// CHECK: spirv.AtomicIAdd <Device> <AcquireRelease> %{{.*}}, %{{.*}} : !spirv.ptr<i64, StorageBuffer>
// CHECK: gpu.module @scatter
// CHECK: memref.atomic_rmw addf
module attributes {gpu.container_module} {
  gpu.module @scatter attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, AtomicFloat32AddEXT, Int64, Int64Atomics], [SPV_EXT_shader_atomic_float_add, SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
    gpu.func @scatter(%out: memref<100xf32>, %counts: memref<100xi32>, %totals: memref<100xi64>, %v: f32, %n: i32, %m: i64, %i: index) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %0 = memref.atomic_rmw addf %v, %out[%i] : (f32, memref<100xf32>) -> f32
      %1 = memref.atomic_rmw addi %n, %counts[%i] : (i32, memref<100xi32>) -> i32
      %2 = memref.atomic_rmw addi %m, %totals[%i] : (i64, memref<100xi64>) -> i64
      gpu.return
    }
  }
}
