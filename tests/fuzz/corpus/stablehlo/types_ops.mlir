module @jit_types_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<4x6xf32>, %arg2: tensor<4x6xi8>, %arg3: tensor<4x6xi8>, %arg4: tensor<4x6xui8>, %arg5: tensor<4x6xf16>, %arg6: tensor<3x5xi16>, %arg7: tensor<3x5xui32>) -> (tensor<4x6xf32> {jax.result_info = "result[0]"}, tensor<4x6xf32> {jax.result_info = "result[1]"}, tensor<4x6xf32> {jax.result_info = "result[2]"}, tensor<4x6xf32> {jax.result_info = "result[3]"}, tensor<4x6xf32> {jax.result_info = "result[4]"}, tensor<4x6xf32> {jax.result_info = "result[5]"}, tensor<4x6xf32> {jax.result_info = "result[6]"}, tensor<10x6xf32> {jax.result_info = "result[7]"}, tensor<4xf32> {jax.result_info = "result[8]"}, tensor<6xf32> {jax.result_info = "result[9]"}, tensor<4xi1> {jax.result_info = "result[10]"}, tensor<6xi1> {jax.result_info = "result[11]"}, tensor<4x6xi8> {jax.result_info = "result[12]"}, tensor<4x6xi8> {jax.result_info = "result[13]"}, tensor<4x6xi8> {jax.result_info = "result[14]"}, tensor<4x6xi8> {jax.result_info = "result[15]"}, tensor<4x6xui8> {jax.result_info = "result[16]"}, tensor<4x6xui8> {jax.result_info = "result[17]"}, tensor<4x6xi1> {jax.result_info = "result[18]"}, tensor<6xui8> {jax.result_info = "result[19]"}, tensor<4xi8> {jax.result_info = "result[20]"}, tensor<5xi16> {jax.result_info = "result[21]"}, tensor<3xui32> {jax.result_info = "result[22]"}, tensor<3x5xui32> {jax.result_info = "result[23]"}, tensor<4x6xf16> {jax.result_info = "result[24]"}, tensor<4x6xf32> {jax.result_info = "result[25]"}, tensor<4x6xf16> {jax.result_info = "result[26]"}, tensor<4x6xi8> {jax.result_info = "result[27]"}, tensor<4x6xui16> {jax.result_info = "result[28]"}, tensor<4x6xui32> {jax.result_info = "result[29]"}, tensor<4x6xi16> {jax.result_info = "result[30]"}, tensor<4x6xui8> {jax.result_info = "result[31]"}, tensor<4x6xi8> {jax.result_info = "result[32]"}, tensor<3x5xf32> {jax.result_info = "result[33]"}, tensor<4x4xi32> {jax.result_info = "result[34]"}, tensor<4x4xf32> {jax.result_info = "result[35]"}, tensor<6xui8> {jax.result_info = "result[36]"}, tensor<6xi8> {jax.result_info = "result[37]"}, tensor<4xi1> {jax.result_info = "result[38]"}, tensor<4xi1> {jax.result_info = "result[39]"}, tensor<4xf32> {jax.result_info = "result[40]"}, tensor<4xf32> {jax.result_info = "result[41]"}) {
    %0 = call @fmod(%arg0, %arg1) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    %1 = stablehlo.floor %arg0 : tensor<4x6xf32>
    %2 = stablehlo.ceil %arg0 : tensor<4x6xf32>
    %3 = call @round(%arg0) : (tensor<4x6xf32>) -> tensor<4x6xf32>
    %4 = stablehlo.round_nearest_afz %arg0 : tensor<4x6xf32>
    %5 = stablehlo.abs %arg0 : tensor<4x6xf32>
    %6 = stablehlo.log_plus_one %5 : tensor<4x6xf32>
    %7 = stablehlo.exponential_minus_one %arg0 : tensor<4x6xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %8 = stablehlo.pad %arg0, %cst, low = [1, -1], high = [2, 1], interior = [1, 0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<10x6xf32>
    %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %9 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.minimum across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %10 = stablehlo.reduce(%arg1 init: %cst_1) applies stablehlo.multiply across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %12 = stablehlo.compare GT, %arg0, %11, FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %13 = stablehlo.reduce(%12 init: %c) applies stablehlo.and across dimensions = [1] : (tensor<4x6xi1>, tensor<i1>) -> tensor<4xi1>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %15 = stablehlo.compare GT, %arg0, %14, FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %c_4 = stablehlo.constant dense<false> : tensor<i1>
    %16 = stablehlo.reduce(%15 init: %c_4) applies stablehlo.or across dimensions = [0] : (tensor<4x6xi1>, tensor<i1>) -> tensor<6xi1>
    %17 = stablehlo.add %arg2, %arg3 : tensor<4x6xi8>
    %18 = stablehlo.multiply %arg2, %arg3 : tensor<4x6xi8>
    %19 = stablehlo.remainder %arg2, %arg3 : tensor<4x6xi8>
    %c_5 = stablehlo.constant dense<3> : tensor<i8>
    %20 = call @floor_divide(%arg2, %c_5) : (tensor<4x6xi8>, tensor<i8>) -> tensor<4x6xi8>
    %21 = stablehlo.add %arg4, %arg4 : tensor<4x6xui8>
    %22 = stablehlo.multiply %arg4, %arg4 : tensor<4x6xui8>
    %c_6 = stablehlo.constant dense<200> : tensor<ui8>
    %23 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<ui8>) -> tensor<4x6xui8>
    %24 = stablehlo.compare GT, %arg4, %23, UNSIGNED : (tensor<4x6xui8>, tensor<4x6xui8>) -> tensor<4x6xi1>
    %c_7 = stablehlo.constant dense<255> : tensor<ui8>
    %25 = stablehlo.reduce(%arg4 init: %c_7) applies stablehlo.and across dimensions = [0] : (tensor<4x6xui8>, tensor<ui8>) -> tensor<6xui8>
    %c_8 = stablehlo.constant dense<0> : tensor<i8>
    %26 = stablehlo.reduce(%arg2 init: %c_8) applies stablehlo.or across dimensions = [1] : (tensor<4x6xi8>, tensor<i8>) -> tensor<4xi8>
    %c_9 = stablehlo.constant dense<-32768> : tensor<i16>
    %27 = stablehlo.reduce(%arg6 init: %c_9) applies stablehlo.maximum across dimensions = [0] : (tensor<3x5xi16>, tensor<i16>) -> tensor<5xi16>
    %c_10 = stablehlo.constant dense<4294967295> : tensor<ui32>
    %28 = stablehlo.reduce(%arg7 init: %c_10) applies stablehlo.minimum across dimensions = [1] : (tensor<3x5xui32>, tensor<ui32>) -> tensor<3xui32>
    %c_11 = stablehlo.constant dense<5> : tensor<ui32>
    %29 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<ui32>) -> tensor<3x5xui32>
    %30 = stablehlo.subtract %arg7, %29 : tensor<3x5xui32>
    %31 = stablehlo.multiply %arg5, %arg5 : tensor<4x6xf16>
    %32 = stablehlo.add %31, %arg5 : tensor<4x6xf16>
    %33 = stablehlo.convert %arg5 : (tensor<4x6xf16>) -> tensor<4x6xf32>
    %cst_12 = stablehlo.constant dense<3.000000e+04> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %35 = stablehlo.multiply %arg0, %34 : tensor<4x6xf32>
    %36 = stablehlo.convert %35 : (tensor<4x6xf32>) -> tensor<4x6xf16>
    %cst_13 = stablehlo.constant dense<1.000000e+02> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %38 = stablehlo.multiply %arg0, %37 : tensor<4x6xf32>
    %39 = stablehlo.convert %38 : (tensor<4x6xf32>) -> tensor<4x6xi8>
    %cst_14 = stablehlo.constant dense<1.000000e+04> : tensor<f32>
    %40 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %41 = stablehlo.multiply %arg0, %40 : tensor<4x6xf32>
    %42 = stablehlo.convert %41 : (tensor<4x6xf32>) -> tensor<4x6xui16>
    %cst_15 = stablehlo.constant dense<1.000000e+09> : tensor<f32>
    %43 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %44 = stablehlo.multiply %arg0, %43 : tensor<4x6xf32>
    %45 = stablehlo.convert %44 : (tensor<4x6xf32>) -> tensor<4x6xui32>
    %cst_16 = stablehlo.constant dense<1.000000e+05> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %47 = stablehlo.multiply %arg0, %46 : tensor<4x6xf32>
    %48 = stablehlo.convert %47 : (tensor<4x6xf32>) -> tensor<4x6xi16>
    %49 = stablehlo.convert %arg2 : (tensor<4x6xi8>) -> tensor<4x6xui8>
    %50 = stablehlo.convert %arg4 : (tensor<4x6xui8>) -> tensor<4x6xi8>
    %51 = stablehlo.convert %arg7 : (tensor<3x5xui32>) -> tensor<3x5xf32>
    %52 = stablehlo.transpose %arg3, dims = [1, 0] : (tensor<4x6xi8>) -> tensor<6x4xi8>
    %53 = stablehlo.dot_general %arg2, %52, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x6xi8>, tensor<6x4xi8>) -> tensor<4x4xi32>
    %54 = stablehlo.transpose %arg5, dims = [1, 0] : (tensor<4x6xf16>) -> tensor<6x4xf16>
    %55 = stablehlo.dot_general %arg5, %54, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x6xf16>, tensor<6x4xf16>) -> tensor<4x4xf32>
    %c_17 = stablehlo.constant dense<15> : tensor<ui8>
    %56 = stablehlo.reduce(%arg4 init: %c_17) applies stablehlo.and across dimensions = [0] : (tensor<4x6xui8>, tensor<ui8>) -> tensor<6xui8>
    %c_18 = stablehlo.constant dense<16> : tensor<i8>
    %57 = stablehlo.reduce(%arg2 init: %c_18) applies stablehlo.or across dimensions = [0] : (tensor<4x6xi8>, tensor<i8>) -> tensor<6xi8>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %58 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %59 = stablehlo.compare GT, %arg0, %58, FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %c_20 = stablehlo.constant dense<false> : tensor<i1>
    %60 = stablehlo.reduce(%59 init: %c_20) applies stablehlo.and across dimensions = [1] : (tensor<4x6xi1>, tensor<i1>) -> tensor<4xi1>
    %cst_21 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %61 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %62 = stablehlo.compare LT, %arg0, %61, FLOAT : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xi1>
    %c_22 = stablehlo.constant dense<true> : tensor<i1>
    %63 = stablehlo.reduce(%62 init: %c_22) applies stablehlo.or across dimensions = [1] : (tensor<4x6xi1>, tensor<i1>) -> tensor<4xi1>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %64 = stablehlo.reduce(%arg0 init: %cst_23) applies stablehlo.minimum across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_24 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %65 = stablehlo.reduce(%arg1 init: %cst_24) applies stablehlo.multiply across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    return %0, %1, %2, %3, %4, %6, %7, %8, %9, %10, %13, %16, %17, %18, %19, %20, %21, %22, %24, %25, %26, %27, %28, %30, %32, %33, %36, %39, %42, %45, %48, %49, %50, %51, %53, %55, %56, %57, %60, %63, %64, %65 : tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<4x6xf32>, tensor<10x6xf32>, tensor<4xf32>, tensor<6xf32>, tensor<4xi1>, tensor<6xi1>, tensor<4x6xi8>, tensor<4x6xi8>, tensor<4x6xi8>, tensor<4x6xi8>, tensor<4x6xui8>, tensor<4x6xui8>, tensor<4x6xi1>, tensor<6xui8>, tensor<4xi8>, tensor<5xi16>, tensor<3xui32>, tensor<3x5xui32>, tensor<4x6xf16>, tensor<4x6xf32>, tensor<4x6xf16>, tensor<4x6xi8>, tensor<4x6xui16>, tensor<4x6xui32>, tensor<4x6xi16>, tensor<4x6xui8>, tensor<4x6xi8>, tensor<3x5xf32>, tensor<4x4xi32>, tensor<4x4xf32>, tensor<6xui8>, tensor<6xi8>, tensor<4xi1>, tensor<4xi1>, tensor<4xf32>, tensor<4xf32>
  }
  func.func private @fmod(%arg0: tensor<4x6xf32>, %arg1: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = stablehlo.remainder %arg0, %arg1 : tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @round(%arg0: tensor<4x6xf32>) -> tensor<4x6xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  }
  func.func private @floor_divide(%arg0: tensor<4x6xi8>, %arg1: tensor<i8>) -> tensor<4x6xi8> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i8>) -> tensor<4x6xi8>
    %1 = stablehlo.divide %arg0, %0 : tensor<4x6xi8>
    %2 = stablehlo.sign %arg0 : tensor<4x6xi8>
    %3 = stablehlo.sign %arg1 : tensor<i8>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i8>) -> tensor<4x6xi8>
    %5 = stablehlo.compare NE, %2, %4, SIGNED : (tensor<4x6xi8>, tensor<4x6xi8>) -> tensor<4x6xi1>
    %6 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i8>) -> tensor<4x6xi8>
    %7 = stablehlo.remainder %arg0, %6 : tensor<4x6xi8>
    %c = stablehlo.constant dense<0> : tensor<i8>
    %8 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i8>) -> tensor<4x6xi8>
    %9 = stablehlo.compare NE, %7, %8, SIGNED : (tensor<4x6xi8>, tensor<4x6xi8>) -> tensor<4x6xi1>
    %10 = stablehlo.and %5, %9 : tensor<4x6xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i8>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i8>) -> tensor<4x6xi8>
    %12 = stablehlo.subtract %1, %11 : tensor<4x6xi8>
    %13 = call @_where(%10, %12, %1) : (tensor<4x6xi1>, tensor<4x6xi8>, tensor<4x6xi8>) -> tensor<4x6xi8>
    return %13 : tensor<4x6xi8>
  }
  func.func private @_where(%arg0: tensor<4x6xi1>, %arg1: tensor<4x6xi8>, %arg2: tensor<4x6xi8>) -> tensor<4x6xi8> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<4x6xi1>, tensor<4x6xi8>
    return %0 : tensor<4x6xi8>
  }
}
