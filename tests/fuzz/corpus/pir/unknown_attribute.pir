func @f(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %c = reduce_sum(%a) {dims = [1], keepdims = 1}
  return %c
}
