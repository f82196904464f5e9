// mesh batch=2
func @transformer_layer(%x: tensor<2x8x32xf32>, %ln1_g: tensor<32xf32>, %ln1_b: tensor<32xf32>, %wq: tensor<32x4x8xf32>, %wk: tensor<32x4x8xf32>, %wv: tensor<32x4x8xf32>, %wo: tensor<4x8x32xf32>, %ln2_g: tensor<32xf32>, %ln2_b: tensor<32xf32>, %w1: tensor<32x64xf32>, %b1: tensor<64xf32>, %w2: tensor<64x32xf32>, %b2: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %inv_d = constant() {value = 0.03125} : tensor<2x8xf32>
  %eps = constant() {value = 1e-05} : tensor<2x8xf32>
  %0 = broadcast_in_dim(%ln1_g) {dims = [2]} : tensor<1x8x32xf32>
  %1 = broadcast_in_dim(%ln1_b) {dims = [2]} : tensor<1x8x32xf32>
  %scale = constant() {value = 0.35355339059327373} : tensor<2x4x8x8xf32>
  %2 = broadcast_in_dim(%ln2_g) {dims = [2]} : tensor<1x8x32xf32>
  %3 = broadcast_in_dim(%ln2_b) {dims = [2]} : tensor<1x8x32xf32>
  %4 = broadcast_in_dim(%b1) {dims = [2]} : tensor<1x8x64xf32>
  %5 = broadcast_in_dim(%b2) {dims = [2]} : tensor<1x8x32xf32>
  %out = partir.tile 0 (%r : !partir.range<2,1> @"batch") {
    %6 = partir.slice 0 %x[%r]
    %7 = reduce_sum(%6) {dims = [2]}
    %8 = partir.slice 0 %inv_d[%r]
    %9 = mul(%7, %8)
    %10 = broadcast_in_dim(%9) {dims = [0, 1]} : tensor<1x8x32xf32>
    %11 = sub(%6, %10)
    %12 = mul(%11, %11)
    %13 = reduce_sum(%12) {dims = [2]}
    %14 = mul(%13, %8)
    %15 = partir.slice 0 %eps[%r]
    %16 = add(%14, %15)
    %17 = rsqrt(%16)
    %18 = broadcast_in_dim(%17) {dims = [0, 1]} : tensor<1x8x32xf32>
    %19 = mul(%11, %18)
    %20 = mul(%19, %0)
    %21 = add(%20, %1)
    %22 = dot_general(%21, %wq) {lhs_contract = [2], rhs_contract = [0]}
    %23 = transpose(%22) {permutation = [0, 2, 1, 3]}
    %24 = dot_general(%21, %wk) {lhs_contract = [2], rhs_contract = [0]}
    %25 = transpose(%24) {permutation = [0, 2, 1, 3]}
    %26 = dot_general(%23, %25) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [3]}
    %27 = partir.slice 0 %scale[%r]
    %28 = mul(%26, %27)
    %29 = reduce_max(%28) {dims = [3]}
    %30 = broadcast_in_dim(%29) {dims = [0, 1, 2]} : tensor<1x4x8x8xf32>
    %31 = sub(%28, %30)
    %32 = exp(%31)
    %33 = reduce_sum(%32) {dims = [3]}
    %34 = broadcast_in_dim(%33) {dims = [0, 1, 2]} : tensor<1x4x8x8xf32>
    %35 = div(%32, %34)
    %36 = dot_general(%21, %wv) {lhs_contract = [2], rhs_contract = [0]}
    %37 = transpose(%36) {permutation = [0, 2, 1, 3]}
    %38 = dot_general(%35, %37) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [2]}
    %39 = dot_general(%38, %wo) {lhs_contract = [1, 3], rhs_contract = [0, 1]}
    %40 = add(%6, %39)
    %41 = reduce_sum(%40) {dims = [2]}
    %42 = mul(%41, %8)
    %43 = broadcast_in_dim(%42) {dims = [0, 1]} : tensor<1x8x32xf32>
    %44 = sub(%40, %43)
    %45 = mul(%44, %44)
    %46 = reduce_sum(%45) {dims = [2]}
    %47 = mul(%46, %8)
    %48 = add(%47, %15)
    %49 = rsqrt(%48)
    %50 = broadcast_in_dim(%49) {dims = [0, 1]} : tensor<1x8x32xf32>
    %51 = mul(%44, %50)
    %52 = mul(%51, %2)
    %53 = add(%52, %3)
    %54 = dot_general(%53, %w1) {lhs_contract = [2], rhs_contract = [0]}
    %55 = add(%54, %4)
    %56 = relu(%55)
    %57 = dot_general(%56, %w2) {lhs_contract = [2], rhs_contract = [0]}
    %58 = add(%57, %5)
    %59 = add(%40, %58)
    partir.yield %59
  }
  return %out
}
