func @f(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %0 = partir.tile 0 (%r : !partir.range<8,2>) {
    %e = exp(%w)
    %1 = partir.slice 0 %x[%r]
    %2 = matmul(%1, %e)
    partir.yield %2
  }
  return %0
}
