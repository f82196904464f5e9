// expect: error: calls nest deeper than 64 (a recursive function?)
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @loop(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @loop(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = call @loop(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
