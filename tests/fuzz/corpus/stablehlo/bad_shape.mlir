// expect: bad/shape.mlir:4:8: error: 'stablehlo.dot_general': 
func.func @main(%x: tensor<4x3xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.dot_general %x, %x, contracting_dims = [1] x [1] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x4xf32>
  %1 = stablehlo.dot_general %x, %x, contracting_dims = [0] x [1] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<4x4xf32>
}
