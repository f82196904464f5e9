module @jit_cnn attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8x8x3xf32>, %arg1: tensor<2x4xf32>, %arg2: tensor<3x3x3x4xf32>, %arg3: tensor<3x3x4x8xf32>, %arg4: tensor<8x4xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<3x3x3x4xf32> {jax.result_info = "result[1]"}, tensor<3x3x4x8xf32> {jax.result_info = "result[2]"}, tensor<8x4xf32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.convolution(%arg0, %arg2) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x8x8x4xf32>
    %1 = call @relu(%0) : (tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x8x4xf32>
    %3 = stablehlo.compare GT, %0, %2, FLOAT : (tensor<2x8x8x4xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<f32>
    %5 = "stablehlo.reduce_window"(%1, %4) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %57 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %57 : tensor<f32>
    }) : (tensor<2x8x8x4xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
    %cst_1 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x4x4x4xf32>
    %7 = stablehlo.divide %5, %6 : tensor<2x4x4x4xf32>
    %8 = stablehlo.convolution(%7, %arg3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x4x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x2x2x8xf32>
    %9 = stablehlo.tanh %8 : tensor<2x2x2x8xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x2x2x8xf32>
    %11 = stablehlo.subtract %10, %9 : tensor<2x2x2x8xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3x3x1x8xf32>
    %cst_4 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3x3x1x8xf32>
    %14 = stablehlo.multiply %12, %13 : tensor<3x3x1x8xf32>
    %15 = stablehlo.convolution(%9, %14) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 8 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x2x2x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x2x2x8xf32>
    %cst_5 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %16 = stablehlo.reduce(%15 init: %cst_5) applies stablehlo.maximum across dimensions = [1, 2] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %17 = stablehlo.reshape %16 : (tensor<2x8xf32>) -> tensor<2x1x1x8xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2, 3] : (tensor<2x1x1x8xf32>) -> tensor<2x2x2x8xf32>
    %19 = stablehlo.compare EQ, %15, %18, FLOAT : (tensor<2x2x2x8xf32>, tensor<2x2x2x8xf32>) -> tensor<2x2x2x8xi1>
    %20 = stablehlo.convert %19 : (tensor<2x2x2x8xi1>) -> tensor<2x2x2x8xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %21 = stablehlo.reduce(%20 init: %cst_6) applies stablehlo.add across dimensions = [1, 2] : (tensor<2x2x2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
    %22 = stablehlo.dot_general %16, %arg4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
    %23 = stablehlo.subtract %22, %arg1 : tensor<2x4xf32>
    %24 = stablehlo.multiply %23, %23 : tensor<2x4xf32>
    %cst_7 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %26 = stablehlo.multiply %25, %23 : tensor<2x4xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.reduce(%24 init: %cst_8) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x4xf32>, tensor<f32>) -> tensor<f32>
    %cst_9 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %28 = stablehlo.divide %27, %cst_9 : tensor<f32>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_11 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %29 = stablehlo.divide %cst_10, %cst_11 : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %31 = stablehlo.multiply %30, %26 : tensor<2x4xf32>
    %32 = stablehlo.dot_general %31, %16, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    %33 = stablehlo.transpose %32, dims = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %34 = stablehlo.dot_general %31, %arg4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<8x4xf32>) -> tensor<2x8xf32>
    %35 = stablehlo.divide %34, %21 : tensor<2x8xf32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [0, 3] : (tensor<2x8xf32>) -> tensor<2x2x2x8xf32>
    %37 = stablehlo.multiply %36, %20 : tensor<2x2x2x8xf32>
    %38 = stablehlo.reshape %14 : (tensor<3x3x1x8xf32>) -> tensor<3x3x1x8x1xf32>
    %39 = stablehlo.transpose %38, dims = [0, 1, 3, 2, 4] : (tensor<3x3x1x8x1xf32>) -> tensor<3x3x8x1x1xf32>
    %40 = stablehlo.reshape %39 : (tensor<3x3x8x1x1xf32>) -> tensor<3x3x8x1xf32>
    %41 = stablehlo.reverse %40, dims = [0, 1] : tensor<3x3x8x1xf32>
    %42 = stablehlo.convolution(%37, %41) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 8 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x2x2x8xf32>, tensor<3x3x8x1xf32>) -> tensor<2x2x2x8xf32>
    %43 = stablehlo.multiply %42, %11 : tensor<2x2x2x8xf32>
    %44 = stablehlo.multiply %43, %9 : tensor<2x2x2x8xf32>
    %45 = stablehlo.add %43, %44 : tensor<2x2x2x8xf32>
    %46 = stablehlo.convolution(%7, %45) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x4x4x4xf32>, tensor<2x2x2x8xf32>) -> tensor<3x3x4x8xf32>
    %47 = stablehlo.reverse %arg3, dims = [0, 1] : tensor<3x3x4x8xf32>
    %48 = stablehlo.convolution(%45, %47) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 1], [2, 1]], lhs_dilate = [2, 2], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x2x2x8xf32>, tensor<3x3x4x8xf32>) -> tensor<2x4x4x4xf32>
    %cst_12 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x4x4x4xf32>
    %50 = stablehlo.divide %48, %49 : tensor<2x4x4x4xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %51 = stablehlo.pad %50, %cst_13, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 1, 1, 0] : (tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x9x9x4xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %52 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<f32>
    %53 = "stablehlo.reduce_window"(%51, %52) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %57 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %57 : tensor<f32>
    }) : (tensor<2x9x9x4xf32>, tensor<f32>) -> tensor<2x8x8x4xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<2x8x8x4xf32>
    %55 = stablehlo.select %3, %53, %54 : tensor<2x8x8x4xi1>, tensor<2x8x8x4xf32>
    %56 = stablehlo.convolution(%arg0, %55) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x8x8x3xf32>, tensor<2x8x8x4xf32>) -> tensor<3x3x3x4xf32>
    return %28, %56, %46, %33 : tensor<f32>, tensor<3x3x3x4xf32>, tensor<3x3x4x8xf32>, tensor<8x4xf32>
  }
  func.func private @relu(%arg0: tensor<2x8x8x4xf32>) -> tensor<2x8x8x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x8x8x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x8x8x4xf32>
    return %1 : tensor<2x8x8x4xf32>
  }
}
