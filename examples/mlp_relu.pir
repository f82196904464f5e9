// A 2-layer MLP with a ReLU: relu(x . w1) . w2, batch 16, 32 -> 64 -> 16.
// examples/train_mlp.lua trains it (docs/grad.md).
func @mlp(%x: tensor<16x32xf32>, %w1: tensor<32x64xf32>,
          %w2: tensor<64x16xf32>) -> tensor<16x16xf32> {
  %h = matmul(%x, %w1)
  %a = relu(%h)
  %p = matmul(%a, %w2)
  return %p
}
