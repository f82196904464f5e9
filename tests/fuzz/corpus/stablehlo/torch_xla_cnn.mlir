// A small ResNet-style network as torch-xla's xm.get_stablehlo prints
// one (NCHW, OIHW): a module named IrToHlo.N, a 3x3 convolution with
// padding 1, an inference batch norm folded to a scale and a shift, relu,
// max_pool2d(3, stride 2, padding 1) as a reduce_window, a residual 1x1
// convolution with stride 2, adaptive average pooling, a linear layer
// with its weight transposed, and the results returned as a tuple (with
// a get_tuple_element of it).  Written by hand; gen_jax.py runs it with
// XLA for torch_xla_cnn.expected<k>.npy.
module @IrToHlo.57 attributes {mhlo.cross_program_prefetches = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<2x3x8x8xf32>, %arg1: tensor<4x3x3x3xf32>, %arg2: tensor<4xf32>, %arg3: tensor<4xf32>, %arg4: tensor<4x3x1x1xf32>, %arg5: tensor<5x4xf32>, %arg6: tensor<5xf32>) -> tuple<tensor<2x5xf32>, tensor<2x4x4x4xf32>> {
    %0 = stablehlo.convolution(%arg0, %arg1) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>], result_layout = dense<[3, 2, 1, 0]> : tensor<4xindex>, xla_shape = "f32[2,4,8,8]{3,2,1,0}"} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %2 = stablehlo.multiply %0, %1 : tensor<2x4x8x8xf32>
    %3 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<4xf32>) -> tensor<2x4x8x8xf32>
    %4 = stablehlo.add %2, %3 : tensor<2x4x8x8xf32>
    %5 = stablehlo.constant dense<0.000000e+00> : tensor<2x4x8x8xf32>
    %6 = stablehlo.maximum %4, %5 : tensor<2x4x8x8xf32>
    %7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %8 = "stablehlo.reduce_window"(%6, %7) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) {padding = dense<[[0, 0], [0, 0], [1, 1], [1, 1]]> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 1, 3, 3>, window_strides = array<i64: 1, 1, 2, 2>} : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x4x4xf32>
    %9 = stablehlo.convolution(%arg0, %arg4) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 2]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<4x3x1x1xf32>) -> tensor<2x4x4x4xf32>
    %10 = stablehlo.add %8, %9 : tensor<2x4x4x4xf32>
    %11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.reduce(%10 init: %11) applies stablehlo.add across dimensions = [2, 3] : (tensor<2x4x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %13 = stablehlo.constant dense<1.600000e+01> : tensor<2x4xf32>
    %14 = stablehlo.divide %12, %13 : tensor<2x4xf32>
    %15 = stablehlo.transpose %arg5, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[4,5]{0,1}"} : (tensor<5x4xf32>) -> tensor<4x5xf32>
    %16 = stablehlo.dot_general %14, %15, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
    %17 = stablehlo.broadcast_in_dim %arg6, dims = [1] : (tensor<5xf32>) -> tensor<2x5xf32>
    %18 = stablehlo.add %16, %17 : tensor<2x5xf32>
    %19 = stablehlo.tuple %18, %10 {xla_shape = "(f32[2,5]{1,0}, f32[2,4,4,4]{3,2,1,0})"} : tuple<tensor<2x5xf32>, tensor<2x4x4x4xf32>>
    %20 = stablehlo.get_tuple_element %19[1] : (tuple<tensor<2x5xf32>, tensor<2x4x4x4xf32>>) -> tensor<2x4x4x4xf32>
    %21 = stablehlo.tuple %18, %20 {xla_shape = "(f32[2,5]{1,0}, f32[2,4,4,4]{3,2,1,0})"} : tuple<tensor<2x5xf32>, tensor<2x4x4x4xf32>>
    return %21 : tuple<tensor<2x5xf32>, tensor<2x4x4x4xf32>>
  }
}
