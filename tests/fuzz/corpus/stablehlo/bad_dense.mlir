// expect: bad/dense.mlir:3:27: error: 'stablehlo.constant': 3 elements for a type of 4 elements
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}
