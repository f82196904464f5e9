// mesh batch=2,model=2
func @mlp(%x: tensor<16x32xf32>, %w: tensor<32x32xf32>, %u: tensor<32x32xf32>) -> tensor<16x32xf32> {
  %0 = partir.tile 0 (%r1 : !partir.range<16,8>) {
    %1 = partir.slice 0 %x[%r1]
    %2 = partir.sum (%r2 : !partir.range<32,16> @"model") {
      %3 = partir.slice 1 %w[%r2]
      %4 = matmul(%1, %3)
      %5 = partir.slice 0 %u[%r2]
      %6 = matmul(%4, %5)
      partir.yield %6
    }
    partir.yield %2
  }
  return %0
}
