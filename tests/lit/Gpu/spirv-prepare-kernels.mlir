// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-prepare-kernels))" | FileCheck %s

// The entry-point ABI comes from the known block size; a float max over the
// block is a group max per subgroup (NaN tracked by a group max of a flag),
// partials in Workgroup memory, and a fold over the subgroups whose result
// is the init when it runs zero times (one subgroup).
// CHECK-LABEL: gpu.func @row_max
// CHECK-SAME: spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [256, 1, 1]>
// CHECK: %[[P:.*]] = memref.alloc() : memref<256xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.subgroup_reduce maximumf
// CHECK: arith.cmpf uno
// CHECK: gpu.subgroup_reduce maxui
// CHECK: gpu.subgroup_id
// CHECK: gpu.num_subgroups
// CHECK: gpu.barrier
// CHECK: %[[INIT:.*]] = memref.load %[[P]]
// CHECK: %[[FOLD:.*]] = scf.for %{{.*}} = %[[ONE:.*]] to %[[N:.*]] step {{.*}} iter_args(%{{.*}} = %[[INIT]])
// CHECK: arith.maximumf
// CHECK: %[[RAN:.*]] = arith.cmpi sgt, %[[N]], %[[ONE]]
// CHECK: arith.select %[[RAN]], %[[FOLD]], %[[INIT]]
// CHECK-NOT: gpu.all_reduce
gpu.module @kernels {
  gpu.func @row_max(%in: memref<256xf32>, %out: memref<1xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %t = gpu.thread_id x
    %x = memref.load %in[%t] : memref<256xf32>
    %m = gpu.all_reduce maximumf %x uniform {} : (f32) -> f32
    memref.store %m, %out[%c0] : memref<1xf32>
    gpu.return
  }
}
