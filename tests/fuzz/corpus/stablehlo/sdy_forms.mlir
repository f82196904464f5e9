// Shardy's forms, written by hand: a mesh with device_ids in order, a
// second mesh no sharding names, open dimensions ('?'), priorities
// ('p0', 'p1'), an explicit 'replicated', a constraint, a result.
// tests/stablehlo.sh: x's rows over "x" and w's columns over "y" leave
// every device its own block of tanh(x . w + b): no collectives, the
// result split [["x"], ["y"]].
module @sdy_forms {
  sdy.mesh @unused = <["u"=8]>
  sdy.mesh @mesh = <["x"=2, "y"=2], device_ids=[0, 1, 2, 3]>
  func.func public @main(%x: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", ?}p1, {?}]>},
                         %w: tensor<4x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}p0], replicated={"x"}>},
                         %b: tensor<6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}]>})
      -> (tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {?}]>}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {"y"}]> : tensor<8x6xf32>
    %2 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<6xf32>) -> tensor<8x6xf32>
    %3 = stablehlo.add %1, %2 : tensor<8x6xf32>
    %4 = stablehlo.tanh %3 : tensor<8x6xf32>
    return %4 : tensor<8x6xf32>
  }
}
