// expect: bad/result_number.mlir:4:28: error: '%0' has 2 values; there is no '#2'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = call @two(%x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %1 = stablehlo.add %0#0, %0#2 : tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @two(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %a, %a : tensor<4xf32>, tensor<4xf32>
}
