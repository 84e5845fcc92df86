// RUN: kiln-opt %s --kiln-form-kernels --verify-diagnostics

// A `?`-sized copy of a static 1 (what kiln.matmul once lowered to): the
// rewrites of upstream's fusion and empty-tensor patterns undo each other
// on it without end. Kernel formation stops at its bound with an error,
// where it used to run until memory was gone.
#bcast = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// expected-error @below {{kernel formation did not settle (at most}}
module {
  func.func @main(%a: tensor<?x1x?xf32>, %b: tensor<?x1x?xf32>) -> tensor<?x1x?xf32> {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %zero = arith.constant 0.0 : f32
    %batch = tensor.dim %b, %c0 : tensor<?x1x?xf32>
    %n = tensor.dim %b, %c2 : tensor<?x1x?xf32>
    %e = tensor.empty(%batch, %c1, %n) : tensor<?x?x?xf32>
    %copy = linalg.generic {indexing_maps = [#bcast, #id],
                            iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%b : tensor<?x1x?xf32>) outs(%e : tensor<?x?x?xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<?x?x?xf32>
    %rows = tensor.dim %a, %c0 : tensor<?x1x?xf32>
    %acc = tensor.empty(%rows, %n) : tensor<?x1x?xf32>
    %init = linalg.fill ins(%zero : f32) outs(%acc : tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
    %r = linalg.batch_matmul ins(%a, %copy : tensor<?x1x?xf32>, tensor<?x?x?xf32>)
                             outs(%init : tensor<?x1x?xf32>) -> tensor<?x1x?xf32>
    return %r : tensor<?x1x?xf32>
  }
}
