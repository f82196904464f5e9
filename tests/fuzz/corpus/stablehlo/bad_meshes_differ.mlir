// expect: bad/meshes_differ.mlir:4:122: error: this sharding's mesh @b (x=4) is not the one another sharding uses, @a (x=2) at bad/meshes_differ.mlir:2:1: a partir program runs on one mesh
sdy.mesh @a = <["x"=2]>
sdy.mesh @b = <["x"=4]>
func.func @main(%x: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@a, [{"x"}, {}]>}, %y: tensor<4x4xf32> {sdy.sharding = #sdy.sharding<@b, [{"x"}, {}]>}) -> tensor<4x4xf32> {
  return %x : tensor<4x4xf32>
}
