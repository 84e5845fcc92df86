// RUN: kiln-opt %s --kiln-gpu-scans --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-gpu-scans="max-grid-x=100" --split-input-file | FileCheck %s --check-prefix=GRID

// A cumsum of 2^20 + 3 floats: 513 chunks of 2048. Their totals (513
// blocks), a scan of the totals (one block per row), then each chunk's scan
// plus its offset (513 blocks); each block scans across its 256 threads in
// workgroup memory, 8 steps, a barrier each. The chunks' scans go through a
// second workgroup buffer, 2048 elements padded by one in 32: stored at
// consecutive elements by consecutive threads, scanned 8 consecutive
// elements a thread, loaded back as they were stored.
// CHECK-LABEL: func @long
// CHECK: %[[T:.*]] = memref.alloc() : memref<1x513xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c513{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(%[[W:.*]] : memref<2x256xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2112xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-9: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}) threads
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c513{{.*}}) threads({{.*}}) in ({{.*}} = %c256{{.*}}) workgroup(%{{.*}}, %[[C:.*]] : memref<2112xf32
// CHECK: memref.load %[[T]]
// CHECK-COUNT-8: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-9: gpu.barrier
// CHECK-COUNT-8: memref.store %{{.*}}, %[[C]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: memref.store %{{.*}}, %arg1
// CHECK: gpu.barrier
// CHECK-NOT: scf.for {{.*}} iter_args
// GRID-LABEL: func @long
// GRID: gpu.launch blocks({{.*}}) in ({{.*}} = %c100{{.*}})
// GRID: scf.for %{{.*}} = %{{.*}} to %c513{{.*}} step %c100
func.func @long(%arg0: memref<1048579xf32>, %arg1: memref<1048579xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1048579 = arith.constant 1048579 : index
  %c1 = arith.constant 1 : index
  %0 = scf.for %i = %c0 to %c1048579 step %c1 iter_args(%acc = %cst) -> (f32) {
    %1 = memref.load %arg0[%i] : memref<1048579xf32>
    %2 = arith.addf %acc, %1 : f32
    memref.store %2, %arg1[%i] : memref<1048579xf32>
    scf.yield %2 : f32
  }
  return
}

// -----

// 2^24 floats are 8192 chunks: blocks take segments of 2 chunks in turn,
// so that one block scans 4096 totals, not 8192.
// CHECK-LABEL: func @segments
// CHECK: %[[T:.*]] = memref.alloc() : memref<1x4096xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4096{{.*}}) threads
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}) threads
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4096{{.*}}) threads
// CHECK: memref.load %[[T]]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args
func.func @segments(%arg0: memref<16777216xf32>, %arg1: memref<16777216xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %n = arith.constant 16777216 : index
  %c1 = arith.constant 1 : index
  %0 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %cst) -> (f32) {
    %1 = memref.load %arg0[%i] : memref<16777216xf32>
    %2 = arith.addf %acc, %1 : f32
    memref.store %2, %arg1[%i] : memref<16777216xf32>
    scf.yield %2 : f32
  }
  return
}

// -----

// Rows of one chunk along dim 0 (of 3 x 5 = 15 rows): only the chunks'
// scans; f16 is summed in f32 and rounded when stored.
// CHECK-LABEL: func @one_chunk
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c15{{.*}}) threads
// CHECK: arith.extf
// CHECK: arith.truncf
// CHECK-NOT: gpu.launch
func.func @one_chunk(%arg0: memref<300x3x5xf16>, %arg1: memref<300x3x5xf16>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c300 = arith.constant 300 : index
  scf.for %a = %c0 to %c3 step %c1 {
    scf.for %b = %c0 to %c5 step %c1 {
      %0 = scf.for %i = %c0 to %c300 step %c1 iter_args(%acc = %cst) -> (f32) {
        %1 = memref.load %arg0[%i, %a, %b] : memref<300x3x5xf16>
        %2 = arith.extf %1 : f16 to f32
        %3 = arith.addf %acc, %2 : f32
        %4 = arith.truncf %3 : f32 to f16
        memref.store %4, %arg1[%i, %a, %b] : memref<300x3x5xf16>
        scf.yield %3 : f32
      }
    }
  }
  return
}

// -----

// Short rows: one thread each, the rows a parallel loop.
// CHECK-LABEL: func @short
// CHECK-NOT: gpu.launch
// CHECK: scf.parallel (%[[R:.*]]) = (%c0) to (%c64) step (%c1)
// CHECK: scf.for %[[I:.*]] = %c0 to %c8 step %c1 iter_args
// CHECK: memref.load %arg0[%[[R]], %[[I]]]
func.func @short(%arg0: memref<64x8xi32>, %arg1: memref<64x8xi32>) {
  %c64 = arith.constant 64 : index
  %c8 = arith.constant 8 : index
  %c0_i32 = arith.constant 0 : i32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %r = %c0 to %c64 step %c1 {
    %0 = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %c0_i32) -> (i32) {
      %1 = memref.load %arg0[%r, %i] : memref<64x8xi32>
      %2 = arith.addi %acc, %1 : i32
      memref.store %2, %arg1[%r, %i] : memref<64x8xi32>
      scf.yield %2 : i32
    }
  }
  return
}

// -----

// Not a scan: the sum starts at 1.
// CHECK-LABEL: func @not_from_zero
// CHECK-NOT: gpu.launch
// CHECK: scf.for
func.func @not_from_zero(%arg0: memref<4096xf32>, %arg1: memref<4096xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c4096 = arith.constant 4096 : index
  %c1 = arith.constant 1 : index
  %0 = scf.for %i = %c0 to %c4096 step %c1 iter_args(%acc = %one) -> (f32) {
    %1 = memref.load %arg0[%i] : memref<4096xf32>
    %2 = arith.addf %acc, %1 : f32
    memref.store %2, %arg1[%i] : memref<4096xf32>
    scf.yield %2 : f32
  }
  return
}

// -----

// Rows of run-time count and length (`?` dims): the chunk and segment counts
// are host arithmetic; steps 1 and 2 launch only where a row has several
// chunks, step 3 only where the rows are longer than 32, and a thread per
// row takes them where they are not (each form's grid is 0 where the other
// runs). Step 3 reads its offset only where steps 1 and 2 wrote one.
// CHECK-LABEL: func @run_time_length
// CHECK-DAG: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[N:.*]] = memref.dim %arg0, %c1
// CHECK: %[[CHUNKS:.*]] = arith.ceildivsi %[[N]], %c2048
// CHECK: %[[PER:.*]] = arith.maxsi
// CHECK: %[[SEGMENTS:.*]] = arith.ceildivsi %[[CHUNKS]], %[[PER]]
// CHECK: %[[T:.*]] = memref.alloc(%[[ROWS]], %[[SEGMENTS]]) : memref<?x?xf32>
// CHECK: %[[ITEMS:.*]] = arith.muli %[[ROWS]], %[[SEGMENTS]]
// CHECK: %[[SEVERAL:.*]] = arith.cmpi sgt, %[[CHUNKS]], %c1
// CHECK: %[[TOTALS:.*]] = arith.select %[[SEVERAL]], %[[ITEMS]], %c0
// CHECK: %[[BLOCKS:.*]] = arith.minsi %[[TOTALS]], %c2147483647
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[BLOCKS]],
// CHECK: memref.store %{{.*}}, %[[T]]
// CHECK: arith.select %{{.*}}, %[[ROWS]], %c0
// CHECK: gpu.launch
// CHECK: %[[LONG:.*]] = arith.cmpi sgt, %[[N]], %c32
// CHECK: %[[SCANS:.*]] = arith.select %[[LONG]], %{{.*}}, %c0
// CHECK: gpu.launch
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SCANS]]
// CHECK: arith.cmpi ugt, %[[CHUNKS]], %c1
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.load %[[T]]
// CHECK: %[[SHORT:.*]] = arith.cmpi sle, %[[N]], %c32
// CHECK: %[[ROWS_SHORT:.*]] = arith.select %[[SHORT]], %[[ROWS]], %c0
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%[[ROWS_SHORT]])
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %[[N]]
func.func @run_time_length(%arg0: memref<?x?xf32>, %arg1: memref<?x?xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = memref.dim %arg0, %c0 : memref<?x?xf32>
  %n = memref.dim %arg0, %c1 : memref<?x?xf32>
  scf.for %r = %c0 to %rows step %c1 {
    %0 = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %cst) -> (f32) {
      %1 = memref.load %arg0[%r, %i] : memref<?x?xf32>
      %2 = arith.addf %acc, %1 : f32
      memref.store %2, %arg1[%r, %i] : memref<?x?xf32>
      scf.yield %2 : f32
    }
  }
  return
}
