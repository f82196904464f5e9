func @f(%a: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xi32>, tensor<4x2xi32>, tensor<3x1xf32>, tensor<2xf32>) {
  %b = broadcast_in_dim(%a) {dims = [1]} : tensor<2x3xf32>
  %c = convert(%a) : tensor<3xi32>
  %i = iota() {dim = 0} : tensor<4x2xi32>
  %r = reshape(%a) : tensor<3x1xf32>
  %k = constant() {value = [1.5, -2]} : tensor<2xf32>
  return %b, %c, %i, %r, %k
}
