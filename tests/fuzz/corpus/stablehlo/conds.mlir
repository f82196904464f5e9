module @jit_conds attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<i32>) -> (tensor<4x8xf32> {jax.result_info = "result[0]"}, tensor<4x8xf32> {jax.result_info = "result[1]"}, tensor<4x8xf32> {jax.result_info = "result[2]"}, tensor<4x8xf32> {jax.result_info = "result[3]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.compare GT, %0, %cst_0, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %2 = stablehlo.convert %1 : (tensor<i1>) -> tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %14 = stablehlo.subtract %arg0, %13 : tensor<4x8xf32>
      stablehlo.return %14 : tensor<4x8xf32>
    }, {
      %13 = stablehlo.tanh %arg0 : tensor<4x8xf32>
      %cst_7 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %14 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %15 = stablehlo.multiply %13, %14 : tensor<4x8xf32>
      stablehlo.return %15 : tensor<4x8xf32>
    }) : (tensor<i32>) -> tensor<4x8xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %4 = stablehlo.clamp %c, %arg1, %c_1 : tensor<i32>
    %5 = "stablehlo.case"(%4) ({
      %cst_7 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %14 = stablehlo.add %3, %13 : tensor<4x8xf32>
      stablehlo.return %14 : tensor<4x8xf32>
    }, {
      %cst_7 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %13 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
      %14 = stablehlo.multiply %3, %13 : tensor<4x8xf32>
      stablehlo.return %14 : tensor<4x8xf32>
    }, {
      %13 = stablehlo.exponential %3 : tensor<4x8xf32>
      stablehlo.return %13 : tensor<4x8xf32>
    }) : (tensor<i32>) -> tensor<4x8xf32>
    %c_2 = stablehlo.constant dense<5> : tensor<i32>
    %6 = stablehlo.add %arg1, %c_2 : tensor<i32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %7 = stablehlo.clamp %c_3, %6, %c_4 : tensor<i32>
    %8 = "stablehlo.case"(%7) ({
      %13 = stablehlo.sine %arg0 : tensor<4x8xf32>
      stablehlo.return %13 : tensor<4x8xf32>
    }, {
      %13 = stablehlo.cosine %arg0 : tensor<4x8xf32>
      stablehlo.return %13 : tensor<4x8xf32>
    }) : (tensor<i32>) -> tensor<4x8xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %9 = stablehlo.reduce(%arg0 init: %cst_5) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+02> : tensor<f32>
    %10 = stablehlo.compare GT, %9, %cst_6, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %11 = stablehlo.convert %10 : (tensor<i1>) -> tensor<i32>
    %12 = "stablehlo.case"(%11) ({
      %13 = stablehlo.negate %arg0 : tensor<4x8xf32>
      stablehlo.return %13 : tensor<4x8xf32>
    }, {
      %13 = stablehlo.abs %arg0 : tensor<4x8xf32>
      stablehlo.return %13 : tensor<4x8xf32>
    }) : (tensor<i32>) -> tensor<4x8xf32>
    return %3, %5, %8, %12 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  }
}
