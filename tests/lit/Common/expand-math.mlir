// RUN: kiln-opt %s --kiln-expand-math | FileCheck %s

// f32 transcendental ops become arithmetic the vectoriser can widen; f64 is
// left for libm.
// CHECK-LABEL: func @f32
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK: arith.mulf
func.func @f32(%x: f32) -> f32 {
  %0 = math.erf %x : f32
  %1 = math.exp %0 : f32
  return %1 : f32
}

// CHECK-LABEL: func @f64
// CHECK: math.erf %{{.*}} : f64
func.func @f64(%x: f64) -> f64 {
  %0 = math.erf %x : f64
  return %0 : f64
}
