// One pre-LN transformer layer, forward pass:
//   h   = x + Attention(LayerNorm1(x))
//   out = h + MLP(LayerNorm2(h))
// batch 2, sequence 8, d_model 32, 4 heads of size 8, MLP hidden 64, ReLU.
// Layer norm: learned gamma/beta, epsilon 1e-5, biased variance.
// Attention: no mask, scores scaled by 1/sqrt(8).  Projections keep heads
// as a dimension (as Flax's DenseGeneral does): wq, wk, wv are
// [d_model, heads, head_dim] and wo is [heads, head_dim, d_model], so a
// split over heads needs no reshape.
// Inputs and expected output: tests/fixtures/examples/transformer.*.npy
// (tests/fixtures/gen_examples.py computes them independently with numpy).
func @transformer_layer(%x: tensor<2x8x32xf32>,
                        %ln1_g: tensor<32xf32>, %ln1_b: tensor<32xf32>,
                        %wq: tensor<32x4x8xf32>, %wk: tensor<32x4x8xf32>,
                        %wv: tensor<32x4x8xf32>, %wo: tensor<4x8x32xf32>,
                        %ln2_g: tensor<32xf32>, %ln2_b: tensor<32xf32>,
                        %w1: tensor<32x64xf32>, %b1: tensor<64xf32>,
                        %w2: tensor<64x32xf32>, %b2: tensor<32xf32>)
    -> tensor<2x8x32xf32> {
  // ---- layer norm 1 over d_model (dim 2)
  %inv_d = constant() {value = 0.03125} : tensor<2x8xf32>
  %eps = constant() {value = 0.00001} : tensor<2x8xf32>
  %ln1_sum = reduce_sum(%x) {dims = [2]} : tensor<2x8xf32>
  %ln1_mean = mul(%ln1_sum, %inv_d) : tensor<2x8xf32>
  %ln1_mean_b = broadcast_in_dim(%ln1_mean) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln1_xc = sub(%x, %ln1_mean_b) : tensor<2x8x32xf32>
  %ln1_sq = mul(%ln1_xc, %ln1_xc) : tensor<2x8x32xf32>
  %ln1_sqsum = reduce_sum(%ln1_sq) {dims = [2]} : tensor<2x8xf32>
  %ln1_var = mul(%ln1_sqsum, %inv_d) : tensor<2x8xf32>
  %ln1_var_eps = add(%ln1_var, %eps) : tensor<2x8xf32>
  %ln1_rstd = rsqrt(%ln1_var_eps) : tensor<2x8xf32>
  %ln1_rstd_b = broadcast_in_dim(%ln1_rstd) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln1_xn = mul(%ln1_xc, %ln1_rstd_b) : tensor<2x8x32xf32>
  %ln1_g_b = broadcast_in_dim(%ln1_g) {dims = [2]} : tensor<2x8x32xf32>
  %ln1_b_b = broadcast_in_dim(%ln1_b) {dims = [2]} : tensor<2x8x32xf32>
  %ln1_scaled = mul(%ln1_xn, %ln1_g_b) : tensor<2x8x32xf32>
  %h1 = add(%ln1_scaled, %ln1_b_b) : tensor<2x8x32xf32>

  // ---- self-attention
  // projections [2,8,32] x [32,4,8] -> [batch, seq, head, head_dim]
  %q_heads = dot_general(%h1, %wq) {lhs_contract = [2], rhs_contract = [0]} : tensor<2x8x4x8xf32>
  %k_heads = dot_general(%h1, %wk) {lhs_contract = [2], rhs_contract = [0]} : tensor<2x8x4x8xf32>
  %v_heads = dot_general(%h1, %wv) {lhs_contract = [2], rhs_contract = [0]} : tensor<2x8x4x8xf32>
  // -> [batch, head, seq, head_dim]
  %qt = transpose(%q_heads) {permutation = [0, 2, 1, 3]} : tensor<2x4x8x8xf32>
  %kt = transpose(%k_heads) {permutation = [0, 2, 1, 3]} : tensor<2x4x8x8xf32>
  %vt = transpose(%v_heads) {permutation = [0, 2, 1, 3]} : tensor<2x4x8x8xf32>
  // scores[b,h,i,j] = sum_d q[b,h,i,d] k[b,h,j,d] / sqrt(8)
  %scores_raw = dot_general(%qt, %kt) {lhs_batch = [0, 1], rhs_batch = [0, 1], lhs_contract = [3], rhs_contract = [3]} : tensor<2x4x8x8xf32>
  %scale = constant() {value = 0.35355339059327373} : tensor<2x4x8x8xf32>
  %scores = mul(%scores_raw, %scale) : tensor<2x4x8x8xf32>
  // softmax over the key dimension (dim 3)
  %scores_max = reduce_max(%scores) {dims = [3]} : tensor<2x4x8xf32>
  %scores_max_b = broadcast_in_dim(%scores_max) {dims = [0, 1, 2]} : tensor<2x4x8x8xf32>
  %shifted = sub(%scores, %scores_max_b) : tensor<2x4x8x8xf32>
  %exps = exp(%shifted) : tensor<2x4x8x8xf32>
  %exps_sum = reduce_sum(%exps) {dims = [3]} : tensor<2x4x8xf32>
  %exps_sum_b = broadcast_in_dim(%exps_sum) {dims = [0, 1, 2]} : tensor<2x4x8x8xf32>
  %probs = div(%exps, %exps_sum_b) : tensor<2x4x8x8xf32>
  // context[b,h,i,d] = sum_j probs[b,h,i,j] v[b,h,j,d]
  %ctx = dot_general(%probs, %vt) {lhs_batch = [0, 1], rhs_batch = [0, 1], lhs_contract = [3], rhs_contract = [2]} : tensor<2x4x8x8xf32>
  // output projection: contract head and head_dim with wo [4,8,32]
  %attn = dot_general(%ctx, %wo) {lhs_contract = [1, 3], rhs_contract = [0, 1]} : tensor<2x8x32xf32>
  %res1 = add(%x, %attn) : tensor<2x8x32xf32>

  // ---- layer norm 2
  %ln2_sum = reduce_sum(%res1) {dims = [2]} : tensor<2x8xf32>
  %ln2_mean = mul(%ln2_sum, %inv_d) : tensor<2x8xf32>
  %ln2_mean_b = broadcast_in_dim(%ln2_mean) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln2_xc = sub(%res1, %ln2_mean_b) : tensor<2x8x32xf32>
  %ln2_sq = mul(%ln2_xc, %ln2_xc) : tensor<2x8x32xf32>
  %ln2_sqsum = reduce_sum(%ln2_sq) {dims = [2]} : tensor<2x8xf32>
  %ln2_var = mul(%ln2_sqsum, %inv_d) : tensor<2x8xf32>
  %ln2_var_eps = add(%ln2_var, %eps) : tensor<2x8xf32>
  %ln2_rstd = rsqrt(%ln2_var_eps) : tensor<2x8xf32>
  %ln2_rstd_b = broadcast_in_dim(%ln2_rstd) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln2_xn = mul(%ln2_xc, %ln2_rstd_b) : tensor<2x8x32xf32>
  %ln2_g_b = broadcast_in_dim(%ln2_g) {dims = [2]} : tensor<2x8x32xf32>
  %ln2_b_b = broadcast_in_dim(%ln2_b) {dims = [2]} : tensor<2x8x32xf32>
  %ln2_scaled = mul(%ln2_xn, %ln2_g_b) : tensor<2x8x32xf32>
  %h2 = add(%ln2_scaled, %ln2_b_b) : tensor<2x8x32xf32>

  // ---- MLP: relu(h2 w1 + b1) w2 + b2
  %mlp_in = dot_general(%h2, %w1) {lhs_contract = [2], rhs_contract = [0]} : tensor<2x8x64xf32>
  %b1_b = broadcast_in_dim(%b1) {dims = [2]} : tensor<2x8x64xf32>
  %mlp_pre = add(%mlp_in, %b1_b) : tensor<2x8x64xf32>
  %mlp_act = relu(%mlp_pre) : tensor<2x8x64xf32>
  %mlp_out = dot_general(%mlp_act, %w2) {lhs_contract = [2], rhs_contract = [0]} : tensor<2x8x32xf32>
  %b2_b = broadcast_in_dim(%b2) {dims = [2]} : tensor<2x8x32xf32>
  %mlp = add(%mlp_out, %b2_b) : tensor<2x8x32xf32>
  %out = add(%res1, %mlp) : tensor<2x8x32xf32>
  return %out
}
