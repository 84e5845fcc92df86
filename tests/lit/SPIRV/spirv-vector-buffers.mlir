// RUN: kiln-opt %s --split-input-file --pass-pipeline="builtin.module(spirv.module(kiln-spirv-vector-buffers))" | FileCheck %s

// Only aligned vec4 accesses: the buffer becomes an array of vec4 indexed
// by index / 4; no pointer bitcast is left.
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<4 x vector<4xf32>, stride=16> [0])>, StorageBuffer>
// CHECK: %[[Q:.*]] = spirv.ShiftRightLogical %{{.*}}, %{{.*}} : i32, i32
// CHECK: %[[P:.*]] = spirv.AccessChain %{{.*}}[%{{.*}}, %[[Q]]]
// CHECK: spirv.Load "StorageBuffer" %[[P]] ["Aligned", 16] : vector<4xf32>
// CHECK-NOT: spirv.Bitcast
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) -> vector<4xf32> "None" {
    %c0 = spirv.Constant 0 : i32
    %addr = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>
    %p = spirv.AccessChain %addr[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %v = spirv.Bitcast %p : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<4xf32>, StorageBuffer>
    %x = spirv.Load "StorageBuffer" %v ["Aligned", 16] : vector<4xf32>
    spirv.ReturnValue %x : vector<4xf32>
  }
}

// -----

// A vector access without proven alignment: one scalar access per lane.
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>
// CHECK-COUNT-4: spirv.Load "StorageBuffer" %{{.*}} : f32
// CHECK: spirv.CompositeConstruct
// CHECK-NOT: spirv.Bitcast
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) -> vector<4xf32> "None" {
    %c0 = spirv.Constant 0 : i32
    %addr = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>
    %p = spirv.AccessChain %addr[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.array<16 x f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %v = spirv.Bitcast %p : !spirv.ptr<f32, StorageBuffer> to !spirv.ptr<vector<4xf32>, StorageBuffer>
    %x = spirv.Load "StorageBuffer" %v : vector<4xf32>
    spirv.ReturnValue %x : vector<4xf32>
  }
}

// -----

// A buffer of run-time size (a runtime array) is handled alike: left as
// a pointer bitcast before, which spirv-val rejects ("not a logical
// pointer"). Aligned: a runtime array of vec2 of f64; unaligned: lanes.
// CHECK-LABEL: spirv.module
// CHECK: spirv.GlobalVariable @aligned bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<vector<2xf64>, stride=16> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @unaligned bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>
// CHECK: spirv.Load "StorageBuffer" %{{.*}} ["Aligned", 16] : vector<2xf64>
// CHECK-COUNT-2: spirv.Load "StorageBuffer" %{{.*}} : f64
// CHECK-NOT: spirv.Bitcast
spirv.module Logical GLSL450 {
  spirv.GlobalVariable @aligned bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>
  spirv.GlobalVariable @unaligned bind(0, 1) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>
  spirv.func @k(%i: i32) -> vector<2xf64> "None" {
    %c0 = spirv.Constant 0 : i32
    %a = spirv.mlir.addressof @aligned : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>
    %pa = spirv.AccessChain %a[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f64, StorageBuffer>
    %va = spirv.Bitcast %pa : !spirv.ptr<f64, StorageBuffer> to !spirv.ptr<vector<2xf64>, StorageBuffer>
    %x = spirv.Load "StorageBuffer" %va ["Aligned", 16] : vector<2xf64>
    %u = spirv.mlir.addressof @unaligned : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>
    %pu = spirv.AccessChain %u[%c0, %i] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f64, stride=8> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f64, StorageBuffer>
    %vu = spirv.Bitcast %pu : !spirv.ptr<f64, StorageBuffer> to !spirv.ptr<vector<2xf64>, StorageBuffer>
    %y = spirv.Load "StorageBuffer" %vu : vector<2xf64>
    %s = spirv.FAdd %x, %y : vector<2xf64>
    spirv.ReturnValue %s : vector<2xf64>
  }
}
