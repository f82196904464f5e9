// expect: bad/truncated.mlir:5:1: error: unexpected end of input
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %x, %x : tensor<4xf32>
