// The program of sdy_forms.mlir with GSPMD strings, written by hand, for
// the mesh x=2,y=2 (devices 0 1 2 3 at (x, y) = (0,0) (0,1) (1,0) (1,1)):
//   {devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}
//       rows by x (0 -> 2 steps x), y replicates (0 -> 1)
//   {devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}
//       the grid 0 2 1 3: columns by y, x replicates
//   {devices=[2,2]0,1,2,3}   rows by x, columns by y
// tests/stablehlo.sh: the same lowering as sdy_forms.mlir.
module @gspmd_forms {
  func.func public @main(%x: tensor<8x4xf32> {mhlo.sharding = "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}"},
                         %w: tensor<4x6xf32> {mhlo.sharding = "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}"},
                         %b: tensor<6xf32> {mhlo.sharding = "{replicated}"})
      -> (tensor<8x6xf32> {mhlo.sharding = "{devices=[2,1,2]<=[4] last_tile_dim_replicate}"}) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x6xf32>) -> tensor<8x6xf32>
    %1 = stablehlo.custom_call @Sharding(%0) {mhlo.sharding = "{devices=[2,2]0,1,2,3}"} : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %2 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<6xf32>) -> tensor<8x6xf32>
    %3 = stablehlo.add %1, %2 : tensor<8x6xf32>
    %4 = stablehlo.tanh %3 : tensor<8x6xf32>
    return %4 : tensor<8x6xf32>
  }
}
