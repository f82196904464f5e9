// The talk's 2-layer MLP (no activation): y = (x . w) . u.
// Batch 16, width 256. Partition it with e.g. `arg-tile 0 0 8; propagate`
// to get mlp_tiled.pir.
// Inputs and expected output: tests/fixtures/examples/mlp.*.npy.
func @mlp(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>,
          %u: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %0 = matmul(%x, %w)
  %1 = matmul(%0, %u)
  return %1
}
