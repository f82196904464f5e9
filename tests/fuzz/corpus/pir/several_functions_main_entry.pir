func @helper(%a: tensor<2xf32>) -> tensor<2xf32> {
  %b = neg(%a)
  return %b
}
func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %b = exp(%a)
  return %b
}
