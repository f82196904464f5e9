func @f(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %c = matmul(%a, %b) : tensor<2x4xf32>
  return %c
}
