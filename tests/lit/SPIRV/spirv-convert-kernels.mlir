// RUN: kiln-opt %s --kiln-spirv-convert-kernels --split-input-file | FileCheck %s

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

// -----

// Floor and ceil divisions (a folded view of `?` strides delinearises its
// index with floordivsi) expand to divisions toward zero: ArithToSPIRV has
// no pattern for them, and the kernel failed to legalize.
// CHECK: spirv.module @{{.*}}divisions
// CHECK-NOT: floordivsi
// CHECK-NOT: ceildivsi
// CHECK: spirv.SDiv
// CHECK: gpu.module @divisions
module attributes {gpu.container_module} {
  gpu.module @divisions attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, #spirv.resource_limits<>>} {
    gpu.func @divisions(%out: memref<2xi32>, %a: i32, %b: i32) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %f = arith.floordivsi %a, %b : i32
      %c = arith.ceildivsi %a, %b : i32
      memref.store %f, %out[%c0] : memref<2xi32>
      memref.store %c, %out[%c1] : memref<2xi32>
      gpu.return
    }
  }
}
