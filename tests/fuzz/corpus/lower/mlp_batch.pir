// mesh batch=2
func @mlp(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>, %u: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = partir.tile 0 (%r : !partir.range<16,8> @"batch") {
    %1 = partir.slice 0 %x[%r]
    %2 = matmul(%1, %w)
    %3 = matmul(%2, %u)
    partir.yield %3
  }
  return %0
}
