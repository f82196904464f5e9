func @f(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi1> {
  %p = compare(%a, %b) {direction = "LE"}
  return %p
}
