// RUN: kiln-opt %s --kiln-gpu-map-loops --split-input-file --verify-diagnostics | FileCheck %s

// The innermost dim comes first and is tiled by 256 threads with a bounds
// check; the outer dim keeps tiles of 1 (blocks).
// CHECK-LABEL: func @tile
// CHECK: %[[T:.*]] = arith.muli %{{.*}}, %c256
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%c1000{{.*}}, %c64{{.*}}) step (%[[T]], %{{.*}})
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%[[T]], %{{.*}})
// CHECK: arith.cmpi ult, %{{.*}}, %c1000
// CHECK: scf.if
// CHECK: memref.store
func.func @tile(%m: memref<64x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1000 = arith.constant 1000 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c1000) step (%c1, %c1) {
    memref.store %f, %m[%i, %j] : memref<64x1000xf32>
    scf.reduce
  }
  return
}

// -----

// Serial work at the top level runs as one thread of one block; the
// constants it uses move into the device region.
// CHECK-LABEL: func @serial
// CHECK: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step
// CHECK-NEXT: arith.constant 1.000000e+00 : f32
// CHECK-NEXT: scf.parallel
// CHECK-NEXT: scf.for
func.func @serial(%m: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  scf.for %i = %c1 to %c16 step %c1 {
    %p = arith.subi %i, %c1 : index
    %x = memref.load %m[%p] : memref<16xf32>
    %y = arith.addf %x, %f : f32
    memref.store %y, %m[%i] : memref<16xf32>
  }
  return
}

// -----

// A subview between serial ops that share a device value (a `?` mean's
// divisor) moves above them: one serial kernel, not two passing the
// divisor through the host ("a value computed on the device is used on
// the host" before).
// CHECK-LABEL: func @serial_around_a_view
// CHECK: memref.subview
// CHECK: scf.parallel
// CHECK: arith.uitofp
// CHECK: memref.store
// CHECK: memref.load
// CHECK: arith.divf
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @serial_around_a_view(%a: memref<5xf32>, %b: memref<5xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %i = arith.index_castui %n : index to i64
  %f = arith.uitofp %i : i64 to f32
  %x = memref.load %a[%c0] : memref<5xf32>
  %y = arith.divf %x, %f : f32
  memref.store %y, %b[%c0] : memref<5xf32>
  %sa = memref.subview %a[4] [1] [1] : memref<5xf32> to memref<1xf32, strided<[1], offset: 4>>
  %z = memref.load %sa[%c0] : memref<1xf32, strided<[1], offset: 4>>
  %w = arith.divf %z, %f : f32
  memref.store %w, %b[%c0] : memref<5xf32>
  return
}

// -----

// A float of a size (a mean's divisor) used by two serial kernels with a
// parallel loop between them is computed in each (one computed on the
// device and read by the next serial kernel failed to compile).
// CHECK-LABEL: func @divisor_of_two_serial_kernels
// CHECK: scf.parallel
// CHECK: arith.uitofp
// CHECK: arith.divf
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: arith.uitofp
// CHECK: arith.divf
func.func @divisor_of_two_serial_kernels(%a: memref<?xf32>, %b: memref<f32>, %c: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %i = arith.index_castui %n : index to i64
  %f = arith.uitofp %i : i64 to f32
  %x = memref.load %b[] : memref<f32>
  %y = arith.divf %x, %f : f32
  memref.store %y, %b[] : memref<f32>
  scf.parallel (%j) = (%c0) to (%n) step (%c1) {
    %v = memref.load %a[%j] : memref<?xf32>
    memref.store %v, %a[%j] : memref<?xf32>
    scf.reduce
  }
  %z = memref.load %c[] : memref<f32>
  %w = arith.divf %z, %f : f32
  memref.store %w, %c[] : memref<f32>
  return
}

// -----

// An innermost dim shorter than a block takes the next dims into the
// threads' dim until it fills one, and dims past the third merge into it (a
// grid has three, and the rest would run one after the other in each
// thread): 2 x 3 x 5 x 7 x 64 runs as 64 x 7 = 448 on the threads, then 5,
// then 3 x 2 = 6, split back (64 and 3 fastest) in the body.
// CHECK-LABEL: func @five_dims
// CHECK: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = ({{.*}}) to (%c448{{.*}}, %c5{{.*}}, %c6{{.*}})
// CHECK: scf.parallel
// CHECK: arith.remui %{{.*}}, %c64
// CHECK: arith.divui %{{.*}}, %c64
// CHECK: arith.remui %{{.*}}, %c3
// CHECK: arith.divui %{{.*}}, %c3
// CHECK: memref.store
func.func @five_dims(%m: memref<2x3x5x7x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %c7 = arith.constant 7 : index
  %c64 = arith.constant 64 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%a, %b, %c, %d, %e) = (%c0, %c0, %c0, %c0, %c0) to (%c2, %c3, %c5, %c7, %c64) step (%c1, %c1, %c1, %c1, %c1) {
    memref.store %f, %m[%a, %b, %c, %d, %e] : memref<2x3x5x7x64xf32>
    scf.reduce
  }
  return
}

// -----

// A loop of run-time size whose innermost dim is static and shorter than a
// block (64 channels of `?` images) takes the dims after it into the
// threads' dim until it fills a block, a `?` one last: 64 x 2 x `?` on the
// threads, then the `?` batch; split back in the body (64 fastest).
// CHECK-LABEL: func @short_rows_of_run_time_count
// CHECK: %[[DIM:.*]] = memref.dim %arg0, %c1
// CHECK: %[[H:.*]] = arith.maxsi %[[DIM]]
// CHECK: %[[HW:.*]] = arith.muli %[[H]], %c128
// CHECK: %[[X:.*]] = arith.minsi %[[HW]]
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%[[X]], %{{.*}}) step
// CHECK: scf.parallel
// CHECK: %[[C:.*]] = arith.remui %[[I:.*]], %c64
// CHECK: %[[Q:.*]] = arith.divui %[[I]], %c64
// CHECK: %[[W:.*]] = arith.remui %[[Q]], %c2
// CHECK: %[[Y:.*]] = arith.divui %[[Q]], %c2
// CHECK: memref.store %{{.*}}, %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}]
func.func @short_rows_of_run_time_count(%m: memref<?x?x2x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %m, %c0 : memref<?x?x2x64xf32>
  %h = memref.dim %m, %c1 : memref<?x?x2x64xf32>
  %f = arith.constant 1.0 : f32
  scf.parallel (%a, %b, %c, %d) = (%c0, %c0, %c0, %c0) to (%n, %h, %c2, %c64) step (%c1, %c1, %c1, %c1) {
    memref.store %f, %m[%a, %b, %c, %d] : memref<?x?x2x64xf32>
    scf.reduce
  }
  return
}

// -----

// The patches of `?` images ([N, C, KH, KW, OH, OW]): a loop whose
// innermost dim is `?` and whose dims do not fit the grid takes the `?`
// dims right after it into the threads' dim (OW x OH: 56 pixels a row left
// most of a block idle), and the static dims past the third into the third
// (KH x C) while it is short; the `?` batch stays in each thread.
// CHECK-LABEL: func @patches_of_run_time_images
// CHECK-DAG: %[[N:.*]] = memref.dim %arg0, %c0
// CHECK-DAG: %[[OH:.*]] = memref.dim %arg0, %c4
// CHECK-DAG: %[[OW:.*]] = memref.dim %arg0, %c5
// CHECK-DAG: %[[W:.*]] = arith.maxsi %[[OW]]
// CHECK-DAG: %[[H:.*]] = arith.maxsi %[[OH]]
// CHECK-DAG: %[[B:.*]] = arith.maxsi %[[N]]
// CHECK: %[[PIXELS:.*]] = arith.muli %[[W]], %[[H]] : index
// CHECK: %[[X:.*]] = arith.minsi %[[PIXELS]]
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[X]], %c3{{.*}}, %c192, %[[B]]) step
// CHECK: scf.parallel
// CHECK: arith.remui %{{.*}}, %[[W]] : index
// CHECK: arith.divui %{{.*}}, %[[W]] : index
// CHECK: arith.remui %{{.*}}, %c3
// CHECK: arith.divui %{{.*}}, %c3
// CHECK: memref.store
func.func @patches_of_run_time_images(%m: memref<?x64x3x3x?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %m, %c0 : memref<?x64x3x3x?x?xf32>
  %oh = memref.dim %m, %c4 : memref<?x64x3x3x?x?xf32>
  %ow = memref.dim %m, %c5 : memref<?x64x3x3x?x?xf32>
  %f = arith.constant 1.0 : f32
  scf.parallel (%a, %b, %c, %d, %e, %g) = (%c0, %c0, %c0, %c0, %c0, %c0) to (%n, %c64, %c3, %c3, %oh, %ow) step (%c1, %c1, %c1, %c1, %c1, %c1) {
    memref.store %f, %m[%a, %b, %c, %d, %e, %g] : memref<?x64x3x3x?x?xf32>
    scf.reduce
  }
  return
}
