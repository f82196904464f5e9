// expect: bad/conv_groups.mlir:4:8: error: 'stablehlo.convolution': feature_group_count and batch_group_count must be 1 or more, one of them 1
// (StableHLO allows groups of the features or of the batch, not both)
func.func @main(%x: tensor<2x5x4xf32>, %k: tensor<3x2x4xf32>) -> tensor<1x3x4xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [1], pad = [[0, 0]], rhs_dilate = [1]} {batch_group_count = 2 : i64, feature_group_count = 2 : i64} : (tensor<2x5x4xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  return %0 : tensor<1x3x4xf32>
}
