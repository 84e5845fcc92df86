// RUN: kiln-opt %s --kiln-attention-to-loops --split-input-file | FileCheck %s
// RUN: kiln-opt %s --kiln-attention-to-loops="lanes=8" --split-input-file | FileCheck %s --check-prefix=LANES
// RUN: kiln-opt %s --kiln-attention-to-loops="max-thread-iterations=64" --split-input-file | FileCheck %s --check-prefix=CHUNKS

// One parallel iteration per (batch, query row); causal rows stop at key
// i; a key raises the max only through the rescaling branch; the
// probability is rounded to bf16 before it multiplies v; out = acc / l.
// CHECK-LABEL: func.func @causal_bf16
// CHECK-NOT: kiln_kernel.attention
// CHECK: scf.parallel (%[[N:.*]], %[[I:.*]]) = ({{.*}}) to (%c2, %c5)
// CHECK: %[[END:.*]] = arith.minui
// CHECK: memref.store %{{.*}}, %arg4[%[[N]], %[[I]], %{{.*}}] : memref<2x5x4xf32>
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[END]] step %{{.*}} iter_args
// CHECK: memref.load %arg1[%[[N]], %[[J]], %{{.*}}] : memref<2x7x8xbf16>
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: arith.cmpf une
// CHECK: arith.cmpf ogt
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: arith.divf
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: memref.store %{{.*}}, %arg3[%[[N]], %[[I]], %{{.*}}] : memref<2x5x4xbf16>
// With 64 loop iterations a thread (Vulkan's bound, scaled down): 17 a
// key (q.k of 8, two updates of 4 sums, the key loop's), so chunks of 3
// keys, ceil(7 / 3) of them, each a thread per row and chunk into partial
// sums, maxima and totals; then a thread per output element weighs its
// row's chunks by exp(max_c - max) (0 for a chunk of no live keys).
// CHUNKS-LABEL: func.func @causal_bf16
// CHUNKS: %[[CHUNKS:.*]] = arith.ceildivsi %{{.*}}, %[[SIZE:.*]] : index
// CHUNKS: %[[SUMS:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %[[CHUNKS]], %{{.*}}) : memref<?x?x?x?xf32>
// CHUNKS: %[[MAX:.*]] = memref.alloc(%{{.*}}, %{{.*}}, %[[CHUNKS]]) : memref<?x?x?xf32>
// CHUNKS: scf.parallel (%[[N:.*]], %[[C:.*]], %[[I:.*]]) = ({{.*}}) to (%{{.*}}, %[[CHUNKS]], %{{.*}})
// CHUNKS: %[[FROM:.*]] = arith.muli %[[C]], %[[SIZE]]
// CHUNKS: %[[END:.*]] = arith.minui %c7
// CHUNKS: %[[TO:.*]] = arith.minui %[[END]]
// CHUNKS: scf.for %{{.*}} = %[[FROM]] to %[[TO]]
// CHUNKS: memref.store %{{.*}}, %[[SUMS]][%[[N]], %[[I]], %[[C]], %{{.*}}]
// CHUNKS: memref.store %{{.*}}, %[[MAX]][%[[N]], %[[I]], %[[C]]]
// CHUNKS: scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = ({{.*}}) to (%c2{{.*}}, %c4{{.*}}, %c5{{.*}})
// CHUNKS: arith.maximumf
// CHUNKS: arith.cmpf oeq
// CHUNKS: math.exp
// CHUNKS: arith.divf
// CHUNKS: arith.truncf %{{.*}} : f32 to bf16
func.func @causal_bf16(%q: memref<2x5x8xbf16>, %k: memref<2x7x8xbf16>, %v: memref<2x7x4xbf16>,
                       %out: memref<2x5x4xbf16>, %acc: memref<2x5x4xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<2x5x8xbf16>, memref<2x7x8xbf16>, memref<2x7x4xbf16>)
      outs(%out, %acc : memref<2x5x4xbf16>, memref<2x5x4xf32>) {causal, scale = 0.35 : f64}
  return
}

// -----

// A boolean mask of size 1 in its batch and row dims is read at index 0
// there; false keeps -inf.
// CHECK-LABEL: func.func @bool_mask
// CHECK: scf.parallel (%[[N:.*]], %[[I:.*]]) =
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %c3 step %{{.*}} iter_args
// CHECK: %[[BIT:.*]] = memref.load %arg3[%{{.*}}, %{{.*}}, %[[J]]] : memref<1x1x3xi1>
// CHECK: arith.select %[[BIT]], %{{.*}}, %cst
// CHECK-NOT: arith.truncf
func.func @bool_mask(%q: memref<2x5x8xf32>, %k: memref<2x3x8xf32>, %v: memref<2x3x4xf32>,
                     %mask: memref<1x1x3xi1>, %out: memref<2x5x4xf32>, %acc: memref<2x5x4xf32>) {
  kiln_kernel.attention ins(%q, %k, %v mask %mask : memref<2x5x8xf32>, memref<2x3x8xf32>, memref<2x3x4xf32>, memref<1x1x3xi1>)
      outs(%out, %acc : memref<2x5x4xf32>, memref<2x5x4xf32>) {scale = 0.35 : f64}
  return
}

// -----

// f64 inputs: scores and sums in f64 (acc's type), nothing widened or
// rounded (the f32 compute type failed to verify: extf f64 -> f32).
// CHECK-LABEL: func.func @f64_inputs
// CHECK: scf.parallel
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f64
// CHECK: math.exp %{{.*}} : f64
// CHECK: memref.store %{{.*}}, %arg3[%{{.*}}, %{{.*}}, %{{.*}}] : memref<2x5x4xf64>
func.func @f64_inputs(%q: memref<2x5x8xf64>, %k: memref<2x3x8xf64>, %v: memref<2x3x4xf64>,
                      %out: memref<2x5x4xf64>, %acc: memref<2x5x4xf64>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<2x5x8xf64>, memref<2x3x8xf64>, memref<2x3x4xf64>)
      outs(%out, %acc : memref<2x5x4xf64>, memref<2x5x4xf64>) {scale = 0.35 : f64}
  return
}

// -----

// Run-time batch and lengths: the loops' bounds are memref.dim of the
// buffers; no keys at all give 0, not 0 / 0.
// CHECK-LABEL: func.func @run_time_lengths
// CHECK-DAG: %[[B:.*]] = memref.dim %arg0, %c0{{(_[0-9]+)?}} : memref<?x?x8xf32>
// CHECK-DAG: %[[LQ:.*]] = memref.dim %arg0, %c1{{(_[0-9]+)?}} : memref<?x?x8xf32>
// CHECK-DAG: %[[LK:.*]] = memref.dim %arg1, %c1{{(_[0-9]+)?}} : memref<?x?x8xf32>
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[LK]], %c0
// CHECK: scf.parallel ({{.*}}) = ({{.*}}) to (%[[B]], %[[LQ]])
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[LK]] step
// CHECK: %[[O:.*]] = arith.divf
// CHECK: arith.select %[[NONE]], %{{.*}}, %[[O]]
func.func @run_time_lengths(%q: memref<?x?x8xf32>, %k: memref<?x?x8xf32>, %v: memref<?x?x4xf32>,
                            %out: memref<?x?x4xf32>, %acc: memref<?x?x4xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<?x?x8xf32>, memref<?x?x8xf32>, memref<?x?x4xf32>)
      outs(%out, %acc : memref<?x?x4xf32>, memref<?x?x4xf32>) {scale = 0.35 : f64}
  return
}

// -----

// lanes=8 (the CPU's vectors): the dot product is 8 products a step, summed
// across lanes last; the sums' updates and the output move 8 at a time
// (f16 widened and narrowed as vectors).
// LANES-LABEL: func.func @vector_lanes
// LANES: scf.for {{.*}} step %c8{{(_[0-9]+)?}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>)
// LANES: vector.load %arg0{{.*}} : memref<?x?x16xf16>, vector<8xf16>
// LANES: arith.extf {{.*}} : vector<8xf16> to vector<8xf32>
// LANES: vector.reduction <add>
// LANES: vector.load %arg4{{.*}} : memref<?x?x8xf32>, vector<8xf32>
// LANES: arith.truncf {{.*}} : vector<8xf32> to vector<8xf16>
// LANES: vector.store {{.*}}, %arg3{{.*}} : memref<?x?x8xf16>, vector<8xf16>
func.func @vector_lanes(%q: memref<?x?x16xf16>, %k: memref<?x?x16xf16>, %v: memref<?x?x8xf16>,
                        %out: memref<?x?x8xf16>, %acc: memref<?x?x8xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<?x?x16xf16>, memref<?x?x16xf16>, memref<?x?x8xf16>)
      outs(%out, %acc : memref<?x?x8xf16>, memref<?x?x8xf32>) {scale = 0.25 : f64}
  return
}

// -----

// A decode step (one query row): a loop over the batch alone, each
// iteration a task (a unit dim would be folded by the canonicalizer, and
// the task size with it: every head on one thread).
// CHECK-LABEL: func.func @one_query_row
// CHECK: scf.parallel (%{{[a-z0-9_]+}}) = (%{{[a-z0-9_]+}}) to (%c16{{(_[0-9]+)?}}) step
// CHECK: } {kiln.min_task_size = 1 : index}
func.func @one_query_row(%q: memref<16x1x8xf32>, %k: memref<16x40x8xf32>, %v: memref<16x40x8xf32>,
                         %out: memref<16x1x8xf32>, %acc: memref<16x1x8xf32>) {
  kiln_kernel.attention ins(%q, %k, %v : memref<16x1x8xf32>, memref<16x40x8xf32>, memref<16x40x8xf32>)
      outs(%out, %acc : memref<16x1x8xf32>, memref<16x1x8xf32>) {scale = 0.35 : f64}
  return
}
