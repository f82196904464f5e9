func @f(%a: tensor<2x3xf32>) -> tensor<6xf32> {
  %c = reshape(%a)
  return %c
}
