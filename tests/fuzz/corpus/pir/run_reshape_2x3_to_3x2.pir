func @main() -> tensor<3x2xf32> {
  %a = constant() {value = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]} : tensor<2x3xf32>
  %c = reshape(%a) : tensor<3x2xf32>
  return %c
}
