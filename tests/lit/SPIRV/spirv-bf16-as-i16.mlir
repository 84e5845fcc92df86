// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-spirv-bf16-as-i16))" | FileCheck %s

// bf16 on Vulkan: extf/truncf become integer operations on the bits (truncf
// rounds to nearest even: the 0x7FFF bias plus the kept low bit), an arith
// op left on bf16 computes in f32, and what stays bf16 only moves bits.
// CHECK-LABEL: gpu.func @bf16_kernel
// CHECK-DAG: %[[NAN:.*]] = arith.constant dense<32704> : vector<4xi16>
// CHECK-DAG: %[[BIAS:.*]] = arith.constant dense<32767> : vector<4xi32>
// CHECK: %[[LOADED:.*]] = vector.load {{.*}} : memref<64xbf16>, vector<4xbf16>
// CHECK: %[[BITS:.*]] = arith.bitcast %[[LOADED]] : vector<4xbf16> to vector<4xi16>
// CHECK: arith.extui %[[BITS]] : vector<4xi16> to vector<4xi32>
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK: %[[PRODUCT:.*]] = arith.mulf %{{.*}} : vector<4xf32>
// CHECK: %[[ISNAN:.*]] = arith.cmpf une, %[[PRODUCT]], %[[PRODUCT]]
// CHECK: arith.addi %{{.*}}, %[[BIAS]]
// CHECK: %[[ROUNDED:.*]] = arith.trunci %{{.*}} : vector<4xi32> to vector<4xi16>
// CHECK: %[[KEPT:.*]] = arith.select %[[ISNAN]], %[[NAN]], %[[ROUNDED]]
// CHECK: %[[OUT:.*]] = arith.bitcast %[[KEPT]] : vector<4xi16> to vector<4xbf16>
// CHECK: vector.store %[[OUT]], {{.*}} : memref<64xbf16>, vector<4xbf16>
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: arith.maximumf %{{.*}} : f32
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: memref.store %{{.*}} : memref<64xbf16>
// A widening past f32 (a bf16 matmul into f64) goes through f32.
// CHECK: %[[B:.*]] = arith.bitcast %{{.*}} : bf16 to i16
// CHECK: %[[W:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.extf %[[W]] : f32 to f64
gpu.module @kernels {
  gpu.func @bf16_kernel(%in: memref<64xbf16>, %out: memref<64xbf16>) kernel {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %v = vector.load %in[%c0] : memref<64xbf16>, vector<4xbf16>
    %w = arith.extf %v : vector<4xbf16> to vector<4xf32>
    %s = arith.mulf %w, %w : vector<4xf32>
    %r = arith.truncf %s : vector<4xf32> to vector<4xbf16>
    vector.store %r, %out[%c0] : memref<64xbf16>, vector<4xbf16>
    %a = memref.load %in[%c0] : memref<64xbf16>
    %b = memref.load %in[%c1] : memref<64xbf16>
    %m = arith.maximumf %a, %b : bf16
    memref.store %m, %out[%c1] : memref<64xbf16>
    %d = arith.extf %a : bf16 to f64
    %wide = memref.alloca() : memref<1xf64>
    memref.store %d, %wide[%c0] : memref<1xf64>
    gpu.return
  }
}
