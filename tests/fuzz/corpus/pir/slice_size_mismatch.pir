func @f(%x: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = partir.tile 0 (%r : !partir.range<8,4>) {
    %1 = partir.slice 0 %x[%r]
    partir.yield %1
  }
  return %0
}
