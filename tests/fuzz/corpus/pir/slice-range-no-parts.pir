func @f(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %0 = partir.tile 0 (%r : !partir.range<1,4>) {
    %a = partir.slice 0 %x[%r]
    partir.yield %a
  }
  %1 = partir.tile 0 (%q : !partir.range<8,4>) {
    %b = partir.slice 0 %x[%q]
    %c = neg(%b)
    partir.yield %c
  }
  return %0, %1
}
