// One elementwise kernel: the program bench/triton_warm_start.py puts
// beside a Triton kernel of the same work.
func.func @main(%a: tensor<1048576xf32>, %b: tensor<1048576xf32>) -> tensor<1048576xf32> {
  %r = kiln.add %a, %b : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xf32>
  return %r : tensor<1048576xf32>
}
