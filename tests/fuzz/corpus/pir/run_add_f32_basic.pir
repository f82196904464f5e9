func @main() -> tensor<2x2xf32> {
  %a = constant() {value = [[1.0, -2.0], [3.5, 0.0]]} : tensor<2x2xf32>
  %b = constant() {value = [[0.5, 0.5], [-1.0, 2.0]]} : tensor<2x2xf32>
  %c = add(%a, %b)
  return %c
}
