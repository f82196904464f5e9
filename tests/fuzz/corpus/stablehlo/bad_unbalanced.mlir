// expect: bad/unbalanced.mlir:4:38: error: unbalanced
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.mystery %x, [1, 2]] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
