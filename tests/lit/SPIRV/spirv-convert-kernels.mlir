// RUN: kiln-opt %s --kiln-spirv-convert-kernels | FileCheck %s

// A kernel becomes a spirv.module placed before its gpu.module, which the
// host's launch keeps naming; scatter_add's float atomic add becomes a
// relaxed OpAtomicFAddEXT on the element (the target env allows it), and
// the integer one upstream's OpAtomicIAdd.
// CHECK: spirv.module @{{.*}}scatter
// CHECK: spirv.func @scatter
// CHECK: %[[E:.*]] = spirv.AccessChain
// CHECK: spirv.EXT.AtomicFAdd <Device> <None> %[[E]], %{{.*}} : !spirv.ptr<f32, StorageBuffer>
// CHECK: spirv.AtomicIAdd <Device>
// CHECK: gpu.module @scatter
// CHECK: memref.atomic_rmw addf
module attributes {gpu.container_module} {
  gpu.module @scatter attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, AtomicFloat32AddEXT], [SPV_EXT_shader_atomic_float_add, SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
    gpu.func @scatter(%out: memref<100xf32>, %counts: memref<100xi32>, %v: f32, %n: i32, %i: index) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>} {
      %0 = memref.atomic_rmw addf %v, %out[%i] : (f32, memref<100xf32>) -> f32
      %1 = memref.atomic_rmw addi %n, %counts[%i] : (i32, memref<100xi32>) -> i32
      gpu.return
    }
  }
}
