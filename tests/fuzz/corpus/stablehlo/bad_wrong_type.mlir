// expect: bad/wrong_type.mlir:3:22: error: '%x' has type tensor<4xf32> but 'stablehlo.add' says tensor<8xf32>
func.func @main(%x: tensor<4xf32>) -> tensor<8xf32> {
  %0 = stablehlo.add %x, %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}
