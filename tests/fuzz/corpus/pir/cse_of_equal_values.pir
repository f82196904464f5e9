func @f(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %x = exp(%a)
  %y = exp(%a)
  return %x, %y
}
