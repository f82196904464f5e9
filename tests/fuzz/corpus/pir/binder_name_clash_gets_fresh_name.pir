func @f(%r: tensor<8xf32>) -> tensor<8xf32> {
  %0 = partir.tile 0 (%1 : !partir.range<8,4>) {
    %a = partir.slice 0 %r[%1]
    partir.yield %a
  }
  return %0
}
