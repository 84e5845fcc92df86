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

// -----

// bf16 (after kiln-spirv-bf16-as-i16: bits that move) is converted as i16:
// buffers of i16, a bf16 constant's bits (1.0 = 0x3F80 = 16256), and no
// bitcast left between the two names of one type; the original kernel keeps
// bf16 for its launch.
// CHECK: spirv.module @{{.*}}bits
// CHECK: spirv.func @bits
// CHECK-NOT: bf16
// CHECK: spirv.Constant dense<16256> : vector<4xi16>
// CHECK-NOT: spirv.Bitcast
// CHECK: spirv.Select {{.*}} : vector<4xi1>, vector<4xi16>
// CHECK-NOT: spirv.Bitcast
// CHECK: spirv.Store "StorageBuffer" %{{.*}}, %{{.*}} : vector<4xi16>
// CHECK: gpu.module @bits
// CHECK: gpu.func @bits(%{{.*}}: memref<16xvector<4xbf16>>
module attributes {gpu.container_module} {
  gpu.module @bits attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, Int16, StorageBuffer16BitAccess], [SPV_KHR_storage_buffer_storage_class, SPV_KHR_16bit_storage]>, #spirv.resource_limits<>>} {
    gpu.func @bits(%in: memref<16xvector<4xbf16>>, %out: memref<16xvector<4xbf16>>) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>} {
      %c0 = arith.constant 0 : index
      %one = arith.constant dense<1.0> : vector<4xbf16>
      %v = memref.load %in[%c0] : memref<16xvector<4xbf16>>
      %bits = arith.bitcast %v : vector<4xbf16> to vector<4xi16>
      %back = arith.bitcast %bits : vector<4xi16> to vector<4xbf16>
      %zero = arith.constant dense<0> : vector<4xi16>
      %c = arith.cmpi eq, %bits, %zero : vector<4xi16>
      %s = arith.select %c, %one, %back : vector<4xi1>, vector<4xbf16>
      memref.store %s, %out[%c0] : memref<16xvector<4xbf16>>
      gpu.return
    }
  }
}
