func @main() -> tensor<3xi64> {
  %x = constant() {value = [-1.5, 2.0, 0.0]} : tensor<3xf64>
  %zero = constant() {value = 0.0} : tensor<3xf64>
  %a = constant() {value = [10, 20, 30]} : tensor<3xi64>
  %b = constant() {value = [-10, -20, -30]} : tensor<3xi64>
  %p = compare(%x, %zero) {direction = LE}
  %c = select(%p, %a, %b)
  return %c
}
