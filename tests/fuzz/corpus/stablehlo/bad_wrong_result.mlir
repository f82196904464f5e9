// expect: bad/wrong_result.mlir:4:3: error: result 1 of '@main' has type tensor<4xf32> but the signature says tensor<4xi32>
func.func @main(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
