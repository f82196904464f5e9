// mesh model=2
func @mlp(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>, %u: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = partir.sum (%r : !partir.range<32,16> @"model") {
    %1 = partir.slice 1 %w[%r]
    %2 = matmul(%x, %1)
    %3 = partir.slice 0 %u[%r]
    %4 = matmul(%2, %3)
    partir.yield %4
  }
  return %0
}
