func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %b = frobnicate(%a)
  return %b
}
