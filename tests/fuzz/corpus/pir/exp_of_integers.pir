func @f(%a: tensor<2xi32>) -> tensor<2xi32> {
  %c = exp(%a)
  return %c
}
