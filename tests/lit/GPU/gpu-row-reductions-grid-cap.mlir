// RUN: kiln-opt %s --kiln-gpu-row-reductions=max-grid-x=1000 --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-row-reductions --split-input-file | FileCheck %s --check-prefix=UNCAPPED

// More rows (3000) than the grid takes (Vulkan's 65535, here 1000): 1000
// blocks, each looping over rows blockId, blockId + 1000, ..., the stages
// (a softmax's max, sum, normalisation) inside the loop. Vulkan refused
// the 3000-block grid.
// CHECK-LABEL: func @many_rows
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%[[G:.*]] = %c1000, {{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK: scf.for %[[ROW:.*]] = %[[B]] to %c3000{{.*}} step %[[G]] {
// CHECK: arith.remui %[[ROW]]
// CHECK: gpu.all_reduce maximumf
// CHECK: gpu.all_reduce add
// CHECK: vector.store %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {{.*}} : memref<3000x16xf32>
// CHECK: gpu.terminator
// UNCAPPED-LABEL: func @many_rows
// UNCAPPED: gpu.launch blocks({{.*}}) in ({{.*}} = %c3000{{.*}},
// UNCAPPED-NOT: scf.for %{{.*}} = %{{.*}} to %c3000
func.func @many_rows(%x: memref<3000x16xf32>, %out: memref<3000x16xf32>) {
  %cst = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %max = memref.alloc() : memref<3000xf32>
  %sum = memref.alloc() : memref<3000xf32>
  linalg.fill ins(%cst : f32) outs(%max : memref<3000xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<3000x16xf32>) outs(%max : memref<3000xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.maximumf %a, %acc : f32
    linalg.yield %0 : f32
  }
  linalg.fill ins(%zero : f32) outs(%sum : memref<3000xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x, %max : memref<3000x16xf32>, memref<3000xf32>) outs(%sum : memref<3000xf32>) {
  ^bb0(%a: f32, %m: f32, %acc: f32):
    %0 = arith.subf %a, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.addf %1, %acc fastmath<reassoc> : f32
    linalg.yield %2 : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %max, %sum : memref<3000x16xf32>, memref<3000xf32>, memref<3000xf32>) outs(%out : memref<3000x16xf32>) {
  ^bb0(%a: f32, %m: f32, %s: f32, %o: f32):
    %0 = arith.subf %a, %m : f32
    %1 = math.exp %0 : f32
    %2 = arith.divf %1, %s : f32
    linalg.yield %2 : f32
  }
  return
}

// -----

// A run-time row count under a capped grid: at most 1000 blocks (a min on
// the host), each looping.
// CHECK-LABEL: func @run_time_rows
// CHECK: %[[N:.*]] = memref.dim
// CHECK: %[[G:.*]] = arith.minsi %[[N]], %c1000
// CHECK: gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[G]],
// CHECK: scf.for %{{.*}} = %[[B]] to %[[N]] step
// UNCAPPED-LABEL: func @run_time_rows
// UNCAPPED-NOT: arith.minsi
func.func @run_time_rows(%x: memref<?x64xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x64xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %0 = arith.addf %a, %acc fastmath<reassoc> : f32
    linalg.yield %0 : f32
  }
  return
}
