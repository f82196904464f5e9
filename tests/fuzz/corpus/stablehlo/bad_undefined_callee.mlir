// expect: bad/undefined_callee.mlir:3:13: error: call of an undefined function '@nowhere'
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @nowhere(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
