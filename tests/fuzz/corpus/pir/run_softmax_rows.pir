func @main() -> tensor<2x3xf32> {
  %x = constant() {value = [[1.0, 2.0, 3.0], [-1.0, 0.0, -1.0]]} : tensor<2x3xf32>
  %m = reduce_max(%x) {dims = [1]}
  %mb = broadcast_in_dim(%m) {dims = [0]} : tensor<2x3xf32>
  %d = sub(%x, %mb)
  %e = exp(%d)
  %s = reduce_sum(%e) {dims = [1]}
  %sb = broadcast_in_dim(%s) {dims = [0]} : tensor<2x3xf32>
  %p = div(%e, %sb)
  return %p
}
