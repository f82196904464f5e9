// mesh model=2
// A sum over "model" whose result is then tiled over "model": each
// device needs only its rows of the sum, so lowering fuses the all_reduce
// and the chunk into one reduce_scatter (rules/spmd.rules).
func @rs(%x: tensor<8x16xf32>, %w: tensor<16x8xf32>) -> tensor<8x8xf32> {
  %0 = partir.sum (%r : !partir.range<16,8> @"model") {
    %1 = partir.slice 1 %x[%r]
    %2 = partir.slice 0 %w[%r]
    %3 = matmul(%1, %2)
    partir.yield %3
  }
  %4 = partir.tile 0 (%s : !partir.range<8,4> @"model") {
    %5 = partir.slice 0 %0[%s]
    %6 = relu(%5)
    partir.yield %6
  }
  return %4
}
