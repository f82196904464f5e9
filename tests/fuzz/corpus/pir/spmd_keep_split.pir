// Two row tilings over "model" one after the other: the second takes the
// rows each device already has, so the all_gather and the chunk cancel
// (rules/spmd.rules) and nothing is exchanged.
func @keep(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = partir.tile 0 (%r : !partir.range<8,4> @"model") {
    %1 = partir.slice 0 %x[%r]
    %2 = exp(%1)
    partir.yield %2
  }
  %3 = partir.tile 0 (%s : !partir.range<8,4> @"model") {
    %4 = partir.slice 0 %0[%s]
    %5 = neg(%4)
    partir.yield %5
  }
  return %3
}
