// One SGD step of a 2-layer MLP, the backward pass written by hand:
// loss = mean((relu(x . w1) . w2 - y)^2), then w <- w - 0.05 * dloss/dw.
// Batch 16, 64 -> 128 -> 32. Returns (w1', w2', loss).
// Data parallelism needs both x and y split (`--set inputs=x,y`); with
// Megatron and ZeRO it is the training step of tests/train.sh.
func @sgd(%x: tensor<16x64xf32>, %y: tensor<16x32xf32>,
          %w1: tensor<64x128xf32>, %w2: tensor<128x32xf32>)
    -> (tensor<64x128xf32>, tensor<128x32xf32>, tensor<f32>) {
  // forward
  %h = matmul(%x, %w1)
  %a = relu(%h)
  %p = matmul(%a, %w2)
  %e = sub(%p, %y)
  %sq = mul(%e, %e)
  %total = reduce_sum(%sq) {dims = [0, 1]}
  %count = constant() {value = 512.0} : tensor<f32>
  %loss = div(%total, %count)
  // backward: dloss/dp = 2 e / 512
  %scale = constant() {value = 0.00390625} : tensor<16x32xf32>
  %dp = mul(%e, %scale)
  %gw2 = dot_general(%a, %dp) {lhs_contract = [0], rhs_contract = [0]}
  %da = dot_general(%dp, %w2) {lhs_contract = [1], rhs_contract = [1]}
  %zero = constant() {value = 0.0} : tensor<16x128xf32>
  %live = compare(%h, %zero) {direction = GT}
  %dh = select(%live, %da, %zero)
  %gw1 = dot_general(%x, %dh) {lhs_contract = [0], rhs_contract = [0]}
  // update
  %lr1 = constant() {value = 0.05} : tensor<64x128xf32>
  %lr2 = constant() {value = 0.05} : tensor<128x32xf32>
  %step1 = mul(%lr1, %gw1)
  %step2 = mul(%lr2, %gw2)
  %w1n = sub(%w1, %step1)
  %w2n = sub(%w2, %step2)
  return %w1n, %w2n, %loss
}
