func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %t = partir.tile 0 (%i : !partir.range<8,4> @"batch") {
    %s = partir.slice 0 %x[%i]
    %e = exp(%s)
    partir.yield %e
  }
  return %t
}
