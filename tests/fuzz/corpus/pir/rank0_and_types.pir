func @f(%a: tensor<f32>, %b: tensor<1x1xbf16>, %c: tensor<3xi64>, %d: tensor<2xf64>) -> (tensor<f32>, tensor<1x1xbf16>, tensor<3xi64>, tensor<2xf64>) {
  %x = sqrt(%a)
  %y = abs(%b)
  %z = neg(%c)
  %w = tanh(%d)
  return %x, %y, %z, %w
}
