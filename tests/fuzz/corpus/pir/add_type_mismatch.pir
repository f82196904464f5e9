func @f(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  %c = add(%a, %b)
  return %c
}
