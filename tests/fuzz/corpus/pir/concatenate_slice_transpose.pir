func @f(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> (tensor<2x4xf32>, tensor<1x2xf32>, tensor<3x2xf32>) {
  %c = concatenate(%a, %b) {dim = 1}
  %s = slice(%c) {start = [0, 1], limit = [2, 4], strides = [2, 2]}
  %t = transpose(%a) {permutation = [1, 0]}
  return %c, %s, %t
}
