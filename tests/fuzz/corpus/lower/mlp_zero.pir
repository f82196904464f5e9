// mesh data=2
func @mlp(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>, %u: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = partir.tile 0 (%r : !partir.range<32,16> @"data") {
    %1 = partir.slice 0 %w[%r]
    partir.yield %1
  }
  %2 = matmul(%x, %0)
  %3 = partir.tile 0 (%r1 : !partir.range<32,16> @"data") {
    %4 = partir.slice 0 %u[%r1]
    partir.yield %4
  }
  %5 = matmul(%2, %3)
  return %5
}
