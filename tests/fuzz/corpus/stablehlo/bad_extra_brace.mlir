// expect: bad/extra_brace.mlir:7:1: error: expected 'module' or 'func.func', got '}'
module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
}
