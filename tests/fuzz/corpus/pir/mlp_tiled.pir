// The talk's 2-layer MLP after `arg-tile 0 0 8; propagate`: the batch
// dimension of x is split into two tiles of 8 rows, and both matmuls run
// per tile. Computes the same as mlp.pir (same fixtures).
func @mlp(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>,
          %u: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %0 = partir.tile 0 (%r : !partir.range<16,8>) {
    %1 = partir.slice 0 %x[%r]
    %2 = matmul(%1, %w)
    %3 = matmul(%2, %u)
    partir.yield %3
  }
  return %0
}
