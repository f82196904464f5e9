module @jit_updates attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<4xf32>, %arg2: tensor<4x8xi1>, %arg3: tensor<4x8xi32>, %arg4: tensor<i32>) -> (tensor<4x8xf32> {jax.result_info = "result[0]"}, tensor<4x8xf32> {jax.result_info = "result[1]"}, tensor<4x8xf32> {jax.result_info = "result[2]"}, tensor<2x6x4xf32> {jax.result_info = "result[3]"}, tensor<4x8xf32> {jax.result_info = "result[4]"}, tensor<4x8xi1> {jax.result_info = "result[5]"}, tensor<4x8xi32> {jax.result_info = "result[6]"}, tensor<4x8xf32> {jax.result_info = "result[7]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x6x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %2 = "stablehlo.scatter"(%arg0, %1, %arg1) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<1xi32>, tensor<4xf32>) -> tensor<4x8xf32>
    %3 = stablehlo.slice %arg0 [0:1, 0:8] : (tensor<4x8xf32>) -> tensor<1x8xf32>
    %4 = stablehlo.reshape %3 : (tensor<1x8xf32>) -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %6 = stablehlo.multiply %4, %5 : tensor<8xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.compare LT, %arg4, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %8 = stablehlo.add %arg4, %c_2 : tensor<i32>
    %9 = stablehlo.select %7, %8, %arg4 : tensor<i1>, tensor<i32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %11 = "stablehlo.scatter"(%arg0, %10, %6) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<1xi32>, tensor<8xf32>) -> tensor<4x8xf32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %cst_4 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<2x8xf32>
    %14 = "stablehlo.scatter"(%arg0, %12, %13) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<1xi32>, tensor<2x8xf32>) -> tensor<4x8xf32>
    %15 = stablehlo.slice %arg0 [0:2, 0:4] : (tensor<4x8xf32>) -> tensor<2x4xf32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.compare LT, %arg4, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_6 = stablehlo.constant dense<6> : tensor<i32>
    %17 = stablehlo.add %arg4, %c_6 : tensor<i32>
    %18 = stablehlo.select %16, %17, %arg4 : tensor<i1>, tensor<i32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %20 = "stablehlo.scatter"(%0, %19, %15) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0, 1], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<2x6x4xf32>, tensor<1xi32>, tensor<2x4xf32>) -> tensor<2x6x4xf32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %c_8 = stablehlo.constant dense<1> : tensor<i32>
    %22 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %23 = stablehlo.concatenate %21, %22, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %cst_9 = stablehlo.constant dense<-0.000000e+00> : tensor<f32>
    %24 = "stablehlo.scatter"(%arg0, %23, %cst_9) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<2xi32>, tensor<f32>) -> tensor<4x8xf32>
    %c_10 = stablehlo.constant dense<0> : tensor<i32>
    %25 = stablehlo.compare LT, %arg4, %c_10, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_11 = stablehlo.constant dense<4> : tensor<i32>
    %26 = stablehlo.add %arg4, %c_11 : tensor<i32>
    %27 = stablehlo.select %25, %26, %arg4 : tensor<i1>, tensor<i32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %c_12 = stablehlo.constant dense<2> : tensor<i32>
    %29 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %30 = stablehlo.concatenate %28, %29, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %c_13 = stablehlo.constant dense<true> : tensor<i1>
    %31 = "stablehlo.scatter"(%arg2, %30, %c_13) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [0, 1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<i1>, %arg6: tensor<i1>):
      stablehlo.return %arg6 : tensor<i1>
    }) : (tensor<4x8xi1>, tensor<2xi32>, tensor<i1>) -> tensor<4x8xi1>
    %c_14 = stablehlo.constant dense<0> : tensor<i32>
    %32 = stablehlo.compare LT, %arg4, %c_14, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_15 = stablehlo.constant dense<8> : tensor<i32>
    %33 = stablehlo.add %arg4, %c_15 : tensor<i32>
    %34 = stablehlo.select %32, %33, %arg4 : tensor<i1>, tensor<i32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %c_16 = stablehlo.constant dense<7> : tensor<i32>
    %36 = stablehlo.broadcast_in_dim %c_16, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %37 = "stablehlo.scatter"(%arg3, %35, %36) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<i32>, %arg6: tensor<i32>):
      stablehlo.return %arg6 : tensor<i32>
    }) : (tensor<4x8xi32>, tensor<1xi32>, tensor<4xi32>) -> tensor<4x8xi32>
    %c_17 = stablehlo.constant dense<0> : tensor<i32>
    %38 = stablehlo.compare LT, %arg4, %c_17, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_18 = stablehlo.constant dense<8> : tensor<i32>
    %39 = stablehlo.add %arg4, %c_18 : tensor<i32>
    %40 = stablehlo.select %38, %39, %arg4 : tensor<i1>, tensor<i32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %42 = "stablehlo.scatter"(%arg0, %41, %arg1) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [1], scatter_dims_to_operand_dims = [1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %43 = stablehlo.add %arg5, %arg6 : tensor<f32>
      stablehlo.return %43 : tensor<f32>
    }) : (tensor<4x8xf32>, tensor<1xi32>, tensor<4xf32>) -> tensor<4x8xf32>
    return %2, %11, %14, %20, %24, %31, %37, %42 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x6x4xf32>, tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi32>, tensor<4x8xf32>
  }
}
