"builtin.module"() <{sym_name = "jit_windows"}> ({
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<6x37xf32>, tensor<9x4xi32>) -> (tensor<6x37xf32>, tensor<6x12xf32>, tensor<6x37xf32>, tensor<6x37xf32>, tensor<9x4xi32>, tensor<3x18xf32>, tensor<3x19xf32>, tensor<6x37xf32>, tensor<6x37xf32>, tensor<9x8xi32>), res_attrs = [{jax.result_info = "result[0]"}, {jax.result_info = "result[1]"}, {jax.result_info = "result[2]"}, {jax.result_info = "result[3]"}, {jax.result_info = "result[4]"}, {jax.result_info = "result[5]"}, {jax.result_info = "result[6]"}, {jax.result_info = "result[7]"}, {jax.result_info = "result[8]"}, {jax.result_info = "result[9]"}], sym_name = "main", sym_visibility = "public"}> ({
  ^bb0(%arg21: tensor<6x37xf32>, %arg22: tensor<9x4xi32>):
    %30 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %31 = "stablehlo.broadcast_in_dim"(%30) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<f32>
    %32 = "stablehlo.reduce_window"(%arg21, %31) <{base_dilations = array<i64: 1, 1>, padding = dense<0> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> ({
    ^bb0(%arg27: tensor<f32>, %arg28: tensor<f32>):
      %57 = "stablehlo.add"(%arg27, %arg28) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%57) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<3x18xf32>
    %33 = "stablehlo.constant"() <{value = dense<4.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %34 = "stablehlo.broadcast_in_dim"(%33) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<3x18xf32>
    %35 = "stablehlo.divide"(%32, %34) : (tensor<3x18xf32>, tensor<3x18xf32>) -> tensor<3x18xf32>
    %36 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %37 = "stablehlo.broadcast_in_dim"(%36) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<f32>
    %38 = "stablehlo.reduce_window"(%arg21, %37) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 1], [1, 1]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 3, 3>, window_strides = array<i64: 2, 2>}> ({
    ^bb0(%arg25: tensor<f32>, %arg26: tensor<f32>):
      %56 = "stablehlo.maximum"(%arg25, %arg26) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%56) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<3x19xf32>
    %39 = "stablehlo.constant"() <{value = dense<1.500000e+00> : tensor<f32>}> : () -> tensor<f32>
    %40 = "stablehlo.reduce_window"(%arg21, %39) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [2, 2]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 5>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg23: tensor<f32>, %arg24: tensor<f32>):
      %55 = "stablehlo.add"(%arg23, %arg24) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%55) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<6x37xf32>
    %41 = "func.call"(%arg21) <{callee = @cumsum}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    %42 = "stablehlo.slice"(%arg21) <{limit_indices = array<i64: 6, 12>, start_indices = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<6x37xf32>) -> tensor<6x12xf32>
    %43 = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %44 = "stablehlo.broadcast_in_dim"(%43) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<6x12xf32>
    %45 = "stablehlo.multiply"(%42, %44) : (tensor<6x12xf32>, tensor<6x12xf32>) -> tensor<6x12xf32>
    %46 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %47 = "stablehlo.broadcast_in_dim"(%46) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<6x12xf32>
    %48 = "stablehlo.add"(%45, %47) : (tensor<6x12xf32>, tensor<6x12xf32>) -> tensor<6x12xf32>
    %49 = "func.call"(%48) <{callee = @cumprod}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
    %50 = "func.call"(%arg21) <{callee = @cummax}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    %51 = "func.call"(%arg21) <{callee = @cummin}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    %52 = "func.call"(%arg22) <{callee = @cumsum_2}> : (tensor<9x4xi32>) -> tensor<9x4xi32>
    %53 = "func.call"(%arg21) <{callee = @_flip}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    %54 = "func.call"(%arg22) <{callee = @_pad}> : (tensor<9x4xi32>) -> tensor<9x8xi32>
    "func.return"(%41, %49, %50, %51, %52, %35, %38, %40, %53, %54) : (tensor<6x37xf32>, tensor<6x12xf32>, tensor<6x37xf32>, tensor<6x37xf32>, tensor<9x4xi32>, tensor<3x18xf32>, tensor<3x19xf32>, tensor<6x37xf32>, tensor<6x37xf32>, tensor<9x8xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<6x37xf32>) -> tensor<6x37xf32>, res_attrs = [{}], sym_name = "cumsum", sym_visibility = "private"}> ({
  ^bb0(%arg20: tensor<6x37xf32>):
    %29 = "func.call"(%arg20) <{callee = @cumsum_0}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    "func.return"(%29) : (tensor<6x37xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<6x37xf32>) -> tensor<6x37xf32>, sym_name = "cumsum_0", sym_visibility = "private"}> ({
  ^bb0(%arg17: tensor<6x37xf32>):
    %25 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %26 = "stablehlo.broadcast_in_dim"(%25) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<f32>
    %27 = "stablehlo.reduce_window"(%arg17, %26) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [36, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 37>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg18: tensor<f32>, %arg19: tensor<f32>):
      %28 = "stablehlo.add"(%arg18, %arg19) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%28) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<6x37xf32>
    "func.return"(%27) : (tensor<6x37xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<6x12xf32>) -> tensor<6x12xf32>, res_attrs = [{}], sym_name = "cumprod", sym_visibility = "private"}> ({
  ^bb0(%arg16: tensor<6x12xf32>):
    %24 = "func.call"(%arg16) <{callee = @cumprod_1}> : (tensor<6x12xf32>) -> tensor<6x12xf32>
    "func.return"(%24) : (tensor<6x12xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<6x12xf32>) -> tensor<6x12xf32>, sym_name = "cumprod_1", sym_visibility = "private"}> ({
  ^bb0(%arg13: tensor<6x12xf32>):
    %21 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %22 = "stablehlo.reduce_window"(%arg13, %21) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [11, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 12>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg14: tensor<f32>, %arg15: tensor<f32>):
      %23 = "stablehlo.multiply"(%arg14, %arg15) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%23) : (tensor<f32>) -> ()
    }) : (tensor<6x12xf32>, tensor<f32>) -> tensor<6x12xf32>
    "func.return"(%22) : (tensor<6x12xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<6x37xf32>) -> tensor<6x37xf32>, sym_name = "cummax", sym_visibility = "private"}> ({
  ^bb0(%arg10: tensor<6x37xf32>):
    %17 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %18 = "stablehlo.broadcast_in_dim"(%17) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<f32>
    %19 = "stablehlo.reduce_window"(%arg10, %18) <{base_dilations = array<i64: 1, 1>, padding = dense<[[5, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 6, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg11: tensor<f32>, %arg12: tensor<f32>):
      %20 = "stablehlo.maximum"(%arg11, %arg12) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%20) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<6x37xf32>
    "func.return"(%19) : (tensor<6x37xf32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<6x37xf32>) -> tensor<6x37xf32>, sym_name = "cummin", sym_visibility = "private"}> ({
  ^bb0(%arg7: tensor<6x37xf32>):
    %13 = "stablehlo.constant"() <{value = dense<0x7F800000> : tensor<f32>}> : () -> tensor<f32>
    %14 = "stablehlo.broadcast_in_dim"(%13) <{broadcast_dimensions = array<i64>}> : (tensor<f32>) -> tensor<f32>
    %15 = "stablehlo.reduce_window"(%arg7, %14) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [0, 36]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 37>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
      %16 = "stablehlo.minimum"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%16) : (tensor<f32>) -> ()
    }) : (tensor<6x37xf32>, tensor<f32>) -> tensor<6x37xf32>
    "func.return"(%15) : (tensor<6x37xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<9x4xi32>) -> tensor<9x4xi32>, res_attrs = [{}], sym_name = "cumsum_2", sym_visibility = "private"}> ({
  ^bb0(%arg6: tensor<9x4xi32>):
    %12 = "func.call"(%arg6) <{callee = @cumsum_3}> : (tensor<9x4xi32>) -> tensor<9x4xi32>
    "func.return"(%12) : (tensor<9x4xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<9x4xi32>) -> tensor<9x4xi32>, sym_name = "cumsum_3", sym_visibility = "private"}> ({
  ^bb0(%arg3: tensor<9x4xi32>):
    %8 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32>
    %9 = "stablehlo.broadcast_in_dim"(%8) <{broadcast_dimensions = array<i64>}> : (tensor<i32>) -> tensor<i32>
    %10 = "stablehlo.reduce_window"(%arg3, %9) <{base_dilations = array<i64: 1, 1>, padding = dense<[[8, 0], [0, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 9, 1>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg4: tensor<i32>, %arg5: tensor<i32>):
      %11 = "stablehlo.add"(%arg4, %arg5) : (tensor<i32>, tensor<i32>) -> tensor<i32>
      "stablehlo.return"(%11) : (tensor<i32>) -> ()
    }) : (tensor<9x4xi32>, tensor<i32>) -> tensor<9x4xi32>
    "func.return"(%10) : (tensor<9x4xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<6x37xf32>) -> tensor<6x37xf32>, res_attrs = [{}], sym_name = "_flip", sym_visibility = "private"}> ({
  ^bb0(%arg2: tensor<6x37xf32>):
    %7 = "stablehlo.reverse"(%arg2) <{dimensions = array<i64: 0, 1>}> : (tensor<6x37xf32>) -> tensor<6x37xf32>
    "func.return"(%7) : (tensor<6x37xf32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<9x4xi32>) -> tensor<9x8xi32>, res_attrs = [{}], sym_name = "_pad", sym_visibility = "private"}> ({
  ^bb0(%arg1: tensor<9x4xi32>):
    %1 = "stablehlo.slice"(%arg1) <{limit_indices = array<i64: 9, 3>, start_indices = array<i64: 0, 1>, strides = array<i64: 1, 1>}> : (tensor<9x4xi32>) -> tensor<9x2xi32>
    %2 = "func.call"(%1) <{callee = @_flip_4}> : (tensor<9x2xi32>) -> tensor<9x2xi32>
    %3 = "stablehlo.concatenate"(%2, %arg1) <{dimension = 1 : i64}> : (tensor<9x2xi32>, tensor<9x4xi32>) -> tensor<9x6xi32>
    %4 = "stablehlo.slice"(%3) <{limit_indices = array<i64: 9, 5>, start_indices = array<i64: 0, 3>, strides = array<i64: 1, 1>}> : (tensor<9x6xi32>) -> tensor<9x2xi32>
    %5 = "func.call"(%4) <{callee = @_flip_4}> : (tensor<9x2xi32>) -> tensor<9x2xi32>
    %6 = "stablehlo.concatenate"(%3, %5) <{dimension = 1 : i64}> : (tensor<9x6xi32>, tensor<9x2xi32>) -> tensor<9x8xi32>
    "func.return"(%6) : (tensor<9x8xi32>) -> ()
  }) : () -> ()
  "func.func"() <{arg_attrs = [{}], function_type = (tensor<9x2xi32>) -> tensor<9x2xi32>, res_attrs = [{}], sym_name = "_flip_4", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<9x2xi32>):
    %0 = "stablehlo.reverse"(%arg0) <{dimensions = array<i64: 1>}> : (tensor<9x2xi32>) -> tensor<9x2xi32>
    "func.return"(%0) : (tensor<9x2xi32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} : () -> ()
