"builtin.module"() <{sym_name = "ops"}> ({
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x4xf32>, tensor<2x2x3xf32>, tensor<2x3xi1>, tensor<2x3xi32>) -> (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2x3xi1>, tensor<4x3xf32>, tensor<2x2x2xf32>, tensor<2x3xi32>), sym_name = "m/ain", sym_visibility = "public"}> ({
  ^bb0(%arg2: tensor<2x3xf32>, %arg3: tensor<2x3xf32>, %arg4: tensor<3x4xf32>, %arg5: tensor<2x2x3xf32>, %arg6: tensor<2x3xi1>, %arg7: tensor<2x3xi32>):
    %1 = "stablehlo.add"(%arg2, %arg3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.subtract"(%1, %arg3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = "stablehlo.multiply"(%2, %arg2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %4 = "stablehlo.divide"(%3, %arg3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %5 = "stablehlo.maximum"(%4, %arg2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %6 = "stablehlo.minimum"(%3, %arg3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %7 = "stablehlo.abs"(%6) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %8 = "stablehlo.power"(%7, %arg3) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %9 = "stablehlo.negate"(%8) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %10 = "stablehlo.exponential"(%9) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %11 = "stablehlo.log"(%10) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %12 = "stablehlo.tanh"(%11) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %13 = "stablehlo.logistic"(%12) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %14 = "stablehlo.sqrt"(%13) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %15 = "stablehlo.rsqrt"(%14) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %16 = "stablehlo.constant"() <{value = dense<-5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %17 = "stablehlo.constant"() <{value = dense<0.000000e-01> : tensor<f32>}> : () -> tensor<f32>
    %18 = "stablehlo.clamp"(%16, %arg2, %17) : (tensor<f32>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %19 = "stablehlo.sign"(%18) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %20 = "stablehlo.compare"(%15, %19) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %21 = "stablehlo.select"(%20, %15, %19) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %22 = "stablehlo.dot_general"(%21, %arg4) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %23 = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %24 = "stablehlo.reduce"(%21, %23) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg10: tensor<f32>, %arg11: tensor<f32>):
      %48 = "stablehlo.add"(%arg10, %arg11) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%48) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %25 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32>
    %26 = "stablehlo.reduce"(%arg2, %25) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg8: tensor<f32>, %arg9: tensor<f32>):
      %47 = "stablehlo.maximum"(%arg8, %arg9) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%47) : (tensor<f32>) -> ()
    }) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %27 = "stablehlo.add"(%24, %26) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %28 = "stablehlo.transpose"(%arg2) <{permutation = array<i64: 1, 0>}> : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %29 = "stablehlo.not"(%arg6) : (tensor<2x3xi1>) -> tensor<2x3xi1>
    %30 = "stablehlo.and"(%29, %20) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
    %31 = "stablehlo.or"(%30, %arg6) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
    %32 = "stablehlo.xor"(%31, %20) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
    %33 = "stablehlo.concatenate"(%arg2, %arg3) <{dimension = 0 : i64}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %34 = "stablehlo.slice"(%arg5) <{limit_indices = array<i64: 2, 2, 3>, start_indices = array<i64: 0, 0, 1>, strides = array<i64: 1, 1, 1>}> : (tensor<2x2x3xf32>) -> tensor<2x2x2xf32>
    %35 = "stablehlo.dot_general"(%arg5, %arg5) <{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [2]>}> : (tensor<2x2x3xf32>, tensor<2x2x3xf32>) -> tensor<2x2x2xf32>
    %36 = "stablehlo.add"(%34, %35) : (tensor<2x2x2xf32>, tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
    %37 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<2x3xi32>
    %38 = "stablehlo.convert"(%arg2) : (tensor<2x3xf32>) -> tensor<2x3xi32>
    %39 = "stablehlo.add"(%37, %38) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %40 = "stablehlo.reshape"(%39) : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %41 = "stablehlo.reshape"(%40) : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %42 = "stablehlo.add"(%41, %arg7) : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    %43 = "stablehlo.broadcast_in_dim"(%27) <{broadcast_dimensions = array<i64: 0>}> : (tensor<2xf32>) -> tensor<2x3xf32>
    %44 = "stablehlo.add"(%43, %arg2) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %45:2 = "func.call"(%44, %arg2) <{callee = @pair}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
    %46 = "stablehlo.add"(%45#0, %45#1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%46, %22, %27, %28, %32, %33, %36, %42) : (tensor<2x3xf32>, tensor<2x4xf32>, tensor<2xf32>, tensor<3x2xf32>, tensor<2x3xi1>, tensor<4x3xf32>, tensor<2x2x2xf32>, tensor<2x3xi32>) -> ()
  }) : () -> ()
  "func.func"() <{function_type = (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>), sym_name = "pair", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<2x3xf32>, %arg1: tensor<2x3xf32>):
    %0 = "stablehlo.multiply"(%arg0, %arg1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    "func.return"(%0, %arg0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }) : () -> ()
}) {mhlo.num_partitions = 1 : i32} : () -> ()
