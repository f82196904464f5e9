func @main() -> tensor<2x3xf32> {
  %a = constant() {value = [[-1.0, 0.0, 2.5], [3.0, -0.001, 7.0]]} : tensor<2x3xf32>
  %c = relu(%a)
  return %c
}
