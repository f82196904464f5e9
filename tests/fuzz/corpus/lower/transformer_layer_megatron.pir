// mesh model=2
func @transformer_layer(%x: tensor<2x8x32xf32>, %ln1_g: tensor<32xf32>, %ln1_b: tensor<32xf32>, %wq: tensor<32x4x8xf32>, %wk: tensor<32x4x8xf32>, %wv: tensor<32x4x8xf32>, %wo: tensor<4x8x32xf32>, %ln2_g: tensor<32xf32>, %ln2_b: tensor<32xf32>, %w1: tensor<32x64xf32>, %b1: tensor<64xf32>, %w2: tensor<64x32xf32>, %b2: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %ln1_sum = reduce_sum(%x) {dims = [2]}
  %inv_d = constant() {value = 0.03125} : tensor<2x8xf32>
  %ln1_mean = mul(%ln1_sum, %inv_d)
  %ln1_mean_b = broadcast_in_dim(%ln1_mean) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln1_xc = sub(%x, %ln1_mean_b)
  %ln1_sq = mul(%ln1_xc, %ln1_xc)
  %ln1_sqsum = reduce_sum(%ln1_sq) {dims = [2]}
  %ln1_var = mul(%ln1_sqsum, %inv_d)
  %eps = constant() {value = 1e-05} : tensor<2x8xf32>
  %ln1_var_eps = add(%ln1_var, %eps)
  %ln1_rstd = rsqrt(%ln1_var_eps)
  %ln1_rstd_b = broadcast_in_dim(%ln1_rstd) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln1_xn = mul(%ln1_xc, %ln1_rstd_b)
  %ln1_g_b = broadcast_in_dim(%ln1_g) {dims = [2]} : tensor<2x8x32xf32>
  %ln1_scaled = mul(%ln1_xn, %ln1_g_b)
  %ln1_b_b = broadcast_in_dim(%ln1_b) {dims = [2]} : tensor<2x8x32xf32>
  %h1 = add(%ln1_scaled, %ln1_b_b)
  %scale = constant() {value = 0.35355339059327373} : tensor<2x4x8x8xf32>
  %attn = partir.sum (%r : !partir.range<4,2> @"model") {
    %0 = partir.slice 1 %wq[%r]
    %1 = dot_general(%h1, %0) {lhs_contract = [2], rhs_contract = [0]}
    %2 = transpose(%1) {permutation = [0, 2, 1, 3]}
    %3 = partir.slice 1 %wk[%r]
    %4 = dot_general(%h1, %3) {lhs_contract = [2], rhs_contract = [0]}
    %5 = transpose(%4) {permutation = [0, 2, 1, 3]}
    %6 = dot_general(%2, %5) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [3]}
    %7 = partir.slice 1 %scale[%r]
    %8 = mul(%6, %7)
    %9 = reduce_max(%8) {dims = [3]}
    %10 = broadcast_in_dim(%9) {dims = [0, 1, 2]} : tensor<2x2x8x8xf32>
    %11 = sub(%8, %10)
    %12 = exp(%11)
    %13 = reduce_sum(%12) {dims = [3]}
    %14 = broadcast_in_dim(%13) {dims = [0, 1, 2]} : tensor<2x2x8x8xf32>
    %15 = div(%12, %14)
    %16 = partir.slice 1 %wv[%r]
    %17 = dot_general(%h1, %16) {lhs_contract = [2], rhs_contract = [0]}
    %18 = transpose(%17) {permutation = [0, 2, 1, 3]}
    %19 = dot_general(%15, %18) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [2]}
    %20 = partir.slice 0 %wo[%r]
    %21 = dot_general(%19, %20) {lhs_contract = [1, 3], rhs_contract = [0, 1]}
    partir.yield %21
  }
  %res1 = add(%x, %attn)
  %ln2_sum = reduce_sum(%res1) {dims = [2]}
  %ln2_mean = mul(%ln2_sum, %inv_d)
  %ln2_mean_b = broadcast_in_dim(%ln2_mean) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln2_xc = sub(%res1, %ln2_mean_b)
  %ln2_sq = mul(%ln2_xc, %ln2_xc)
  %ln2_sqsum = reduce_sum(%ln2_sq) {dims = [2]}
  %ln2_var = mul(%ln2_sqsum, %inv_d)
  %ln2_var_eps = add(%ln2_var, %eps)
  %ln2_rstd = rsqrt(%ln2_var_eps)
  %ln2_rstd_b = broadcast_in_dim(%ln2_rstd) {dims = [0, 1]} : tensor<2x8x32xf32>
  %ln2_xn = mul(%ln2_xc, %ln2_rstd_b)
  %ln2_g_b = broadcast_in_dim(%ln2_g) {dims = [2]} : tensor<2x8x32xf32>
  %ln2_scaled = mul(%ln2_xn, %ln2_g_b)
  %ln2_b_b = broadcast_in_dim(%ln2_b) {dims = [2]} : tensor<2x8x32xf32>
  %h2 = add(%ln2_scaled, %ln2_b_b)
  %mlp_out = partir.sum (%r1 : !partir.range<64,32> @"model") {
    %22 = partir.slice 1 %w1[%r1]
    %23 = dot_general(%h2, %22) {lhs_contract = [2], rhs_contract = [0]}
    %24 = partir.slice 0 %b1[%r1]
    %25 = broadcast_in_dim(%24) {dims = [2]} : tensor<2x8x32xf32>
    %26 = add(%23, %25)
    %27 = relu(%26)
    %28 = partir.slice 0 %w2[%r1]
    %29 = dot_general(%27, %28) {lhs_contract = [2], rhs_contract = [0]}
    partir.yield %29
  }
  %b2_b = broadcast_in_dim(%b2) {dims = [2]} : tensor<2x8x32xf32>
  %mlp = add(%mlp_out, %b2_b)
  %out = add(%res1, %mlp)
  return %out
}
