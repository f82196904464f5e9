func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %unused = exp(%a)
  %x = neg(%a)
  return %x
}
