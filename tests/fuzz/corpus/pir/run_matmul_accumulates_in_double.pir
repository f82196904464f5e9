func @main() -> tensor<1x1xf32> {
  %a = constant() {value = [[16777216.0, 1.0, 1.0]]} : tensor<1x3xf32>
  %b = constant() {value = [[1.0], [1.0], [1.0]]} : tensor<3x1xf32>
  %c = matmul(%a, %b)
  return %c
}
