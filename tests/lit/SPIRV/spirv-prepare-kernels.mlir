// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-prepare-kernels))" | FileCheck %s

// A workgroup attribution (kiln-gpu-scans'), which kiln-spirv-convert-kernels
// does not take, becomes an allocation in Workgroup storage.
// CHECK-LABEL: gpu.func @scan_step
// CHECK-SAME: (%{{.*}}: memref<256xf32>)
// CHECK-NOT: workgroup(
// CHECK: %[[W:.*]] = memref.alloc() : memref<2x256xf32, #spirv.storage_class<Workgroup>>
// CHECK: memref.store %{{.*}}, %[[W]]

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
// CHECK: %[[RAN:.*]] = arith.cmpi slt, %[[ONE]], %[[N]]
// CHECK: arith.select %[[RAN]], %[[FOLD]], %[[INIT]]
// CHECK-NOT: gpu.all_reduce

// A vector max reduction becomes per-lane arith.maximumf (GLSL FMax is
// undefined on NaN); a vector loop result is guarded with a vector select.
// CHECK-LABEL: gpu.func @lanes
// CHECK: scf.for
// CHECK: vector.broadcast %{{.*}} : i1 to vector<4xi1>
// CHECK: arith.select %{{.*}} : vector<4xi1>, vector<4xf32>
// CHECK-NOT: vector.reduction
// CHECK-COUNT-3: arith.maximumf

gpu.module @kernels {
  gpu.func @scan_step(%in: memref<256xf32>)
      workgroup(%shared: memref<2x256xf32, #gpu.address_space<workgroup>>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %t = gpu.thread_id x
    %x = memref.load %in[%t] : memref<256xf32>
    memref.store %x, %shared[%c0, %t] : memref<2x256xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    gpu.return
  }
  gpu.func @row_max(%in: memref<256xf32>, %out: memref<1xf32>) kernel
      attributes {known_block_size = array<i32: 256, 1, 1>} {
    %c0 = arith.constant 0 : index
    %t = gpu.thread_id x
    %x = memref.load %in[%t] : memref<256xf32>
    %m = gpu.all_reduce maximumf %x uniform {} : (f32) -> f32
    memref.store %m, %out[%c0] : memref<1xf32>
    gpu.return
  }
  gpu.func @lanes(%v: vector<4xf32>, %n: index, %out: memref<1xf32>) kernel
      attributes {known_block_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (vector<4xf32>) {
      %d = arith.addf %acc, %acc : vector<4xf32>
      scf.yield %d : vector<4xf32>
    }
    %m = vector.reduction <maximumf>, %s : vector<4xf32> into f32
    memref.store %m, %out[%c0] : memref<1xf32>
    gpu.return
  }
}
