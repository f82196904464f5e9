// expect: bad/conv_dims.mlir:4:91: error: 'stablehlo.convolution' needs its dimension numbers for operands of rank 3: b, f and the spatial dimensions 0 to 0 once each
// (a spatial dimension named twice)
func.func @main(%x: tensor<2x5x4xf32>, %k: tensor<3x4x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "stablehlo.convolution"(%x, %k) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, 0, 0]x[0, i, o]->[b, 0, f]>, feature_group_count = 1 : i64}> : (tensor<2x5x4xf32>, tensor<3x4x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}
