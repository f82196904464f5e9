// mesh a=2,b=2
// A contraction split over two axes ("a" outside, "b" inside) whose sum is
// then tiled over "a": each device needs its rows of the sum.  Lowering
// sums over "a" first and the rules (rules/spmd.rules) make that a
// reduce_scatter, then sum over "b" only the rows each device keeps.
func @two(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %0 = partir.sum (%r : !partir.range<16,8> @"a") {
    %s = partir.sum (%q : !partir.range<8,4> @"b") {
      %1 = partir.slice 1 %x[%r]
      %2 = partir.slice 1 %1[%q]
      %3 = partir.slice 0 %w[%r]
      %4 = partir.slice 0 %3[%q]
      %5 = matmul(%2, %4)
      partir.yield %5
    }
    partir.yield %s
  }
  %6 = partir.tile 0 (%t : !partir.range<8,4> @"a") {
    %7 = partir.slice 0 %0[%t]
    %8 = relu(%7)
    partir.yield %8
  }
  return %6
}
