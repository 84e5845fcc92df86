// RUN: kiln-opt %s --pass-pipeline="builtin.module(spirv.module(kiln-spirv-push-constants))" | FileCheck %s

// The two scalar parameters spirv-lower-abi-attrs bound after the buffer
// become one push-constant block, in binding order; the buffer keeps its
// binding.
// CHECK: spirv.GlobalVariable @{{.*}} bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK: spirv.GlobalVariable @__kiln_push_constants : !spirv.ptr<!spirv.struct<(i32 [0], i32 [4])>, PushConstant>
// CHECK-NOT: bind(0, 1)
// CHECK-NOT: bind(0, 2)
// CHECK: %[[BLOCK:.*]] = spirv.mlir.addressof @__kiln_push_constants
// CHECK: %[[C1:.*]] = spirv.Constant 1 : i32
// CHECK: spirv.AccessChain %[[BLOCK]][%[[C1]]] : !spirv.ptr<!spirv.struct<(i32 [0], i32 [4])>, PushConstant>, i32 -> !spirv.ptr<i32, PushConstant>
spirv.module Logical GLSL450 requires #spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]> {
  spirv.GlobalVariable @buf bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
  spirv.GlobalVariable @rows bind(0, 1) : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
  spirv.GlobalVariable @cols bind(0, 2) : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
  spirv.func @k() "None" {
    %c0 = spirv.Constant 0 : i32
    %p = spirv.mlir.addressof @cols : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>
    %q = spirv.AccessChain %p[%c0] : !spirv.ptr<!spirv.struct<(i32 [0])>, StorageBuffer>, i32 -> !spirv.ptr<i32, StorageBuffer>
    %cols = spirv.Load "StorageBuffer" %q : i32
    %b = spirv.mlir.addressof @buf : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
    %e = spirv.AccessChain %b[%c0, %cols] : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>, i32, i32 -> !spirv.ptr<f32, StorageBuffer>
    %v = spirv.Load "StorageBuffer" %e : f32
    spirv.Store "StorageBuffer" %e, %v : f32
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @k
}
