module @jit_layout attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16x8xf32> {mhlo.sharding = "{devices=[4,2]<=[2,4]T(1,0)}"}) -> (tensor<16x8xf32> {jax.result_info = "result", mhlo.sharding = "{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"}) {
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<16x8xf32>
    %2 = stablehlo.custom_call @Sharding(%1) {backend_config = "", mhlo.sharding = "{devices=[8,1]<=[8]}"} : (tensor<16x8xf32>) -> tensor<16x8xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16x8xf32>
    %4 = stablehlo.add %2, %3 : tensor<16x8xf32>
    return %4 : tensor<16x8xf32>
  }
}
