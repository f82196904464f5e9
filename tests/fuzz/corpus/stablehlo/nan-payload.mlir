// Constants as MLIR writes them: splats, nested lists, hex blobs (the
// elements' little-endian bytes), special floats as bit patterns, i1 as
// true/false, arith.constant; f64, bf16, i32, i64.  gen_jax.py runs this
// file with XLA for constants.expected<k>.npy.
module @constants {
  func.func @main(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<3xf32>, tensor<2x2xi1>, tensor<3xi32>, tensor<2xi64>, tensor<2xf64>, tensor<2xf32>, tensor<4xf32>) {
    %splat = stablehlo.constant dense<1.500000e+00> : tensor<2x2xf32>
    %0 = stablehlo.add %x, %splat : tensor<2x2xf32>
    %list = stablehlo.constant dense<[[1.000000e+00, -2.000000e+00], [3.250000e+00, 4.000000e+00]]> : tensor<2x2xf32>
    %1 = stablehlo.multiply %x, %list : tensor<2x2xf32>
    %special = stablehlo.constant dense<[0x7F800000, 0xFF800000, 0x80000000]> : tensor<3xf32>
    %bools = stablehlo.constant dense<[[true, false], [false, true]]> : tensor<2x2xi1>
    %ints = stablehlo.constant dense<[-2147483648, 0, 2147483647]> : tensor<3xi32>
    %longs = arith.constant dense<[-9007199254740993, 42]> : tensor<2xi64>
    %doubles = stablehlo.constant dense<[0.10000000000000001, 0x7FF0000000000003]> : tensor<2xf64>
    %halves = stablehlo.constant dense<[1.000000e+00, 0xFF80]> : tensor<2xbf16>
    %halves_f32 = stablehlo.convert %halves : (tensor<2xbf16>) -> tensor<2xf32>
    %blob = stablehlo.constant dense<"0x0000803F000000400000404000008040"> : tensor<4xf32>
    return %0, %1, %special, %bools, %ints, %longs, %doubles, %halves_f32, %blob : tensor<2x2xf32>, tensor<2x2xf32>, tensor<3xf32>, tensor<2x2xi1>, tensor<3xi32>, tensor<2xi64>, tensor<2xf64>, tensor<2xf32>, tensor<4xf32>
  }
}
