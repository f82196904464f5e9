func @f(%x: tensor<4x8xf32>, %w: tensor<8x2xf32>) -> tensor<4x2xf32> {
  %0 = partir.sum (%r : !partir.range<8,2>) {
    %1 = partir.slice 1 %x[%r]
    %2 = partir.slice 0 %w[%r]
    %3 = matmul(%1, %2)
    partir.yield %3
  }
  return %0
}
