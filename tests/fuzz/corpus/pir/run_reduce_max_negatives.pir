func @main() -> tensor<2xf32> {
  %a = constant() {value = [[-3.0, -1.5, -2.0], [-0.5, -7.0, -0.25]]} : tensor<2x3xf32>
  %c = reduce_max(%a) {dims = [1]}
  return %c
}
