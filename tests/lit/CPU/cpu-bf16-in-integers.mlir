// RUN: kiln-opt %s --kiln-cpu-bf16-in-integers | FileCheck %s

// An f32 -> bf16 truncation (a vector one too) becomes integer operations:
// rounded to nearest even through the bits (add 0x7fff plus the kept
// part's lowest bit, then drop 16 bits), a NaN selected apart as the quiet
// 0x7fc0; no truncf is left for LLVM to lower to vcvtneps2bf16, which
// flushes subnormals.
// CHECK-LABEL: func @narrow
// CHECK-NOT: arith.truncf
// CHECK-DAG: %[[ONE:.*]] = arith.constant dense<1> : vector<8xi32>
// CHECK-DAG: %[[SIXTEEN:.*]] = arith.constant dense<16> : vector<8xi32>
// CHECK-DAG: %[[QNAN:.*]] = arith.constant dense<32704> : vector<8xi16>
// CHECK-DAG: %[[HALF:.*]] = arith.constant dense<32767> : vector<8xi32>
// CHECK: %[[NAN:.*]] = arith.cmpf une, %[[V:.*]], %[[V]] : vector<8xf32>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[V]] : vector<8xf32> to vector<8xi32>
// CHECK: %[[KEPT:.*]] = arith.shrui %[[BITS]], %[[SIXTEEN]]
// CHECK: %[[ODD:.*]] = arith.andi %[[KEPT]], %[[ONE]]
// CHECK: %[[BIAS:.*]] = arith.addi %[[ODD]], %[[HALF]]
// CHECK: %[[SUM:.*]] = arith.addi %[[BITS]], %[[BIAS]]
// CHECK: %[[HIGH:.*]] = arith.shrui %[[SUM]], %[[SIXTEEN]]
// CHECK: %[[R16:.*]] = arith.trunci %[[HIGH]] : vector<8xi32> to vector<8xi16>
// CHECK: %[[R:.*]] = arith.select %[[NAN]], %[[QNAN]], %[[R16]]
// CHECK: arith.bitcast %[[R]] : vector<8xi16> to vector<8xbf16>
// CHECK-NOT: arith.truncf
func.func @narrow(%v: vector<8xf32>) -> vector<8xbf16> {
  %t = arith.truncf %v : vector<8xf32> to vector<8xbf16>
  return %t : vector<8xbf16>
}

// Widening is a shift of the bits.
// CHECK-LABEL: func @widen
// CHECK-NOT: arith.extf
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.extui
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
func.func @widen(%s: bf16) -> f32 {
  %e = arith.extf %s : bf16 to f32
  return %e : f32
}

// f16 conversions stay (F16C converts subnormals exactly).
// CHECK-LABEL: func @half
// CHECK: arith.truncf %{{.*}} : f32 to f16
func.func @half(%s: f32) -> f16 {
  %t = arith.truncf %s : f32 to f16
  return %t : f16
}
