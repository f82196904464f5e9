func @f(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = partir.tile 0 (%r : !partir.range<8,4>) {
    %a = partir.slice 0 %x[%r]
    %b = neg(%a)
    %1 = partir.tile 1 (%s : !partir.range<4,2>) {
      %c = partir.slice 1 %b[%s]
      %d = exp(%c)
      partir.yield %d
    }
    partir.yield %1
  }
  return %0
}
