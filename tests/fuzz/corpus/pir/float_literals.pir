func @f() -> tensor<6xf64> {
  %c = constant() {value = [0.1, 1e-05, -2.5e+30, inf, -inf, 3]} : tensor<6xf64>
  return %c
}
