func @f(%a: tensor<2xf32>) -> tensor<2xi1> {
  %c = compare(%a, %a) {direction = SIDEWAYS}
  return %c
}
