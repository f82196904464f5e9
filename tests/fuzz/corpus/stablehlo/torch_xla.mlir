// A linear layer as torch-xla prints it (exported_program_to_stablehlo):
// a module named IrToHlo.N with its attributes, layout attributes on
// operations, a transposed weight.  gen_jax.py runs it with XLA.
module @IrToHlo.14 attributes {mhlo.cross_program_prefetches = [], mhlo.is_dynamic = false, mhlo.use_auto_spmd_partitioning = false} {
  func.func @main(%arg0: tensor<10xf32>, %arg1: tensor<10x10xf32>, %arg2: tensor<4x10xf32>) -> tensor<4x10xf32> {
    %0 = stablehlo.transpose %arg1, dims = [1, 0] {result_layout = dense<[0, 1]> : tensor<2xindex>, xla_shape = "f32[10,10]{0,1}"} : (tensor<10x10xf32>) -> tensor<10x10xf32>
    %1 = stablehlo.dot_general %arg2, %0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x10xf32>, tensor<10x10xf32>) -> tensor<4x10xf32>
    %2 = stablehlo.broadcast_in_dim %arg0, dims = [1] : (tensor<10xf32>) -> tensor<4x10xf32>
    %3 = stablehlo.add %1, %2 : tensor<4x10xf32>
    return %3 : tensor<4x10xf32>
  }
}
