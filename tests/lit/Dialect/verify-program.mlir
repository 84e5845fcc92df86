// RUN: kiln-opt %s --split-input-file --kiln-verify-program --verify-diagnostics
// What a kiln program may hold beyond well-formed kiln ops.

// A program: kiln ops, tensor constants, calls and returns.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<2.0> : tensor<4xf32>
  %0 = func.call @twice(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = kiln.add %0, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.add %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.addf' is not allowed in a kiln program: function bodies hold kiln ops, arith.constant on tensors, func.call and func.return}}
  %0 = arith.addf %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'arith.constant' is not allowed in a kiln program}}
  %c = arith.constant 1.0 : f32
  return %x : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{recursive call: @main -> @main (kiln programs cannot recurse)}}
  %0 = func.call @main(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ping(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @ping(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @pong(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @pong(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{recursive call: @ping -> @pong -> @ping (kiln programs cannot recurse)}}
  %0 = func.call @ping(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// expected-error @+1 {{function @helper has no body: a kiln program defines every function it calls}}
func.func private @helper(tensor<4xf32>) -> tensor<4xf32>

// -----

// expected-error @+1 {{argument #0 of @main has type 'i32': kiln values are ranked tensors}}
func.func @main(%n: i32) {
  return
}

// -----

// expected-error @+1 {{argument #0 of @main type 'tensor<2147483648x2147483648xf32>' is too large: 4611686018427387904 elements overflow int64 as a size in bytes}}
func.func @main(%x: tensor<2147483648x2147483648xf32>) -> tensor<2147483648x2147483648xf32> {
  return %x : tensor<2147483648x2147483648xf32>
}

// -----

func.func @main() {
  // expected-error @+1 {{'arith.constant' op result type 'tensor<1152921504606846976x4xf32>' is too large}}
  %c = arith.constant dense<0.0> : tensor<1152921504606846976x4xf32>
  return
}

// -----

// expected-error @+1 {{'memref.global' is not allowed at the top level of a kiln program, which holds func.func ops only}}
memref.global "private" @g : memref<4xf32>

// -----

// Where a `?` fill's sizes come from is the compiler's to say: a program
// that says it could send a kernel past its buffers.
func.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{'kiln.fill' op has attribute 'kiln.size_sources', which only the compiler sets}}
  %z = kiln.fill {value = 2.5 : f64, kiln.size_sources = array<i64: 3, 0, 0>} : tensor<?x4xf32>
  %a = kiln.add %x, %z : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %a : tensor<?x4xf32>
}
