func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %7 = neg(%a)
  %3 = exp(%7)
  return %3
}
