func @f(%x: tensor<16x4xf32>) -> tensor<16x4xf32> {
  %0 = partir.tile 0 (%r : !partir.range<16,8>) {
    partir.yield %x
  }
  return %0
}
