func @f(%a: tensor<2x3xi32>) -> tensor<2x3xi32> {
  return %a
}
