func @main() -> tensor<5xf32> {
  %a = constant() {value = [4.0, 2.0, 0.25, 100.0, 3.0]} : tensor<5xf32>
  %c = rsqrt(%a)
  return %c
}
