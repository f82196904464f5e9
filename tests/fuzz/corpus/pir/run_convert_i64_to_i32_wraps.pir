func @main() -> tensor<4xi32> {
  %a = constant() {value = [4294967297, -1, 2147483648, 123]} : tensor<4xi64>
  %c = convert(%a) : tensor<4xi32>
  return %c
}
