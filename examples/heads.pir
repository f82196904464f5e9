// Attention's heads as JAX and PyTorch export them: the projection's
// 128 columns are 4 heads of 32, split off by a reshape and merged back
// by another (docs/spmd.md, "Splits through reshape").
func @heads(%x: tensor<16x64xf32>, %wq: tensor<64x128xf32>,
            %wo: tensor<128x64xf32>) -> tensor<16x64xf32> {
  %q = matmul(%x, %wq)
  %q_heads = reshape(%q) : tensor<16x4x32xf32>
  %act = exp(%q_heads)
  %merged = reshape(%act) : tensor<16x128xf32>
  %y = matmul(%merged, %wo)
  return %y
}
