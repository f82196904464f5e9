// expect: bad/conv_batch_groups.mlir:4:8: error: 'stablehlo.convolution' is not supported: batch_group_count other than 1
// (what the gradient of a grouped convolution's kernel writes)
func.func @main(%x: tensor<2x5x4xf32>, %k: tensor<3x2x4xf32>) -> tensor<1x3x4xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<2x5x4xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  return %0 : tensor<1x3x4xf32>
}
