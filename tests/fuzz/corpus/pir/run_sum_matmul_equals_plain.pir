func @main() -> (tensor<2x2xf32>, tensor<2x2xf32>) {
  %x = constant() {value = [[1.0, -2.0, 3.0, 4.0, 0.5, -1.0], [0.0, 5.0, -6.0, 2.0, 1.5, 3.0]]} : tensor<2x6xf32>
  %w = constant() {value = [[2.0, 1.0], [-1.0, 0.0], [3.0, -2.0], [0.5, 4.0], [-4.0, 2.0], [1.0, 1.0]]} : tensor<6x2xf32>
  %plain = matmul(%x, %w)
  %summed = partir.sum (%k : !partir.range<6,2>) {
    %xs = partir.slice 1 %x[%k]
    %ws = partir.slice 0 %w[%k]
    %p = matmul(%xs, %ws)
    partir.yield %p
  }
  return %plain, %summed
}
