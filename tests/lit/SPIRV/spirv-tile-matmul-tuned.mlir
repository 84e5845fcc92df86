// RUN: kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,16 subgroup-size=32" --split-input-file | FileCheck %s
// RUN: not kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,16 subgroup-size=64" --split-input-file 2>/dev/null | FileCheck %s --check-prefix=WIDE
// RUN: not kiln-opt %s --kiln-spirv-tile-matmul="mma-shape=16,16,16 subgroup-size=64" --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=WIDE-ERROR

// A tuned tiling (kiln.tuned, keyed by the shape anchored to powers of two)
// replaces the untuned one (for this output of few tiles, 128 x 128 x 32 on
// 2 x 4 subgroups): 64 x 128 outputs per workgroup of 1 x 4 subgroups,
// each 64 x 32, K in steps of 32 (two matrix steps), loads 4 steps ahead:
// 3 x 5 workgroups of 128 invocations for 300 x 264, stages of 64 x (32 +
// 8) and 32 x (128 + 8) f16, 4 A and 8 B loads per invocation and step:
// step 0's staged and steps 1-3's in flight before the loop, which carries
// those 36 vectors beside the 8 accumulators and loads 12 more per step.
// CHECK: module attributes {kiln.tune_keys = ["vulkan.matmul.coopmat@ac31e319e2dad582:matmul:f16,f16,f32:256x256x64"]
// CHECK: gpu.launch blocks({{[^)]*}}) in (%{{[a-z0-9]+}} = %c3{{[_0-9]*}}, %{{[a-z0-9]+}} = %c5{{[_0-9]*}}, %{{[a-z0-9]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c128
// CHECK: memref.alloc() : memref<2x64x10xvector<4xf16>, #spirv.storage_class<Workgroup>>
// CHECK: memref.alloc() : memref<2x32x34xvector<4xf16>, #spirv.storage_class<Workgroup>>
// CHECK-COUNT-48: vector.load
// CHECK-NOT: vector.load
// CHECK: %{{.*}}:44 = scf.for %{{.*}} = %{{.*}} to %c3{{[_0-9]*}} step %c1{{[_0-9]*}} iter_args
// CHECK-COUNT-12: vector.load
// CHECK-NOT: vector.load
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 10 : index}
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 34 : index}
// CHECK-COUNT-8: gpu.subgroup_mma_compute
// CHECK-COUNT-4: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 10 : index}
// CHECK-COUNT-2: gpu.subgroup_mma_load_matrix {{.*}} {leadDimension = 34 : index}
// CHECK-COUNT-8: gpu.subgroup_mma_compute
// CHECK-NOT: gpu.subgroup_mma_compute
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
module attributes {kiln.tuned = {"vulkan.matmul.coopmat@ac31e319e2dad582:matmul:f16,f16,f32:256x256x64" = "64x128x1x4x32x4"}} {
func.func @mm(%a: memref<300x72xf16>, %b: memref<72x264xf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xf16>, memref<72x264xf16>) outs(%c : memref<300x264xf32>)
  return
}
}

// -----

// Subgroups of 64: the tiling tuned above fits (256 invocations); this one,
// of 1024 invocations whose 512 A loads per step would leave some idle, is
// an error (the engine then compiles again with the defaults, saying so;
// the autotuner skips the candidate).
// WIDE-LABEL: func.func @mm
// WIDE: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c256
// WIDE-ERROR: error: tuned tiling 128x256x4x4x16x4 does not fit the device's cooperative matrices, subgroups or workgroup limits
module attributes {kiln.tuned = {"vulkan.matmul.coopmat@ac31e319e2dad582:matmul:f16,f16,f32:256x256x64" = "128x256x4x4x16x4"}} {
func.func @wide(%a: memref<300x72xf16>, %b: memref<72x264xf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xf16>, memref<72x264xf16>) outs(%c : memref<300x264xf32>)
  return
}
}

// -----

// Untuned, subgroups of 64 take the first candidate that fits: 128 x 128 x
// 32 on 2 x 4 subgroups (512 invocations).
// WIDE-LABEL: func.func @untuned
// WIDE: threads({{[^)]*}}) in (%{{[a-z0-9]+}} = %c512
// WIDE: memref.alloc() : memref<2x128x10xvector<4xf16>, #spirv.storage_class<Workgroup>>
func.func @untuned(%a: memref<300x72xf16>, %b: memref<72x264xf16>, %c: memref<300x264xf32>) {
  linalg.matmul ins(%a, %b : memref<300x72xf16>, memref<72x264xf16>) outs(%c : memref<300x264xf32>)
  return
}
