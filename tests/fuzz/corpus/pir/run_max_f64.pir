func @main() -> tensor<3xf64> {
  %a = constant() {value = [-0.5, 0.0000000001, 3.0]} : tensor<3xf64>
  %b = constant() {value = [-0.25, 0.0, 3.0]} : tensor<3xf64>
  %c = max(%a, %b)
  return %c
}
