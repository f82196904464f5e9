// mesh model=2
// A value computed in column tiles over "model" and then used in row
// tiles over "model": the all_gather of the columns and the chunk of the
// rows fuse into one all_to_all (rules/spmd.rules).
func @a2a(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = partir.tile 1 (%r : !partir.range<8,4> @"model") {
    %1 = partir.slice 1 %x[%r]
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
