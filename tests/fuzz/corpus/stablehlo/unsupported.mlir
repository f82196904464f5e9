// Operations partir cannot express, each refused in one list
// (tests/stablehlo.sh compares the error with unsupported.expected).
module @unsupported {
  func.func public @main(%x: tensor<4xf32>, %i: tensor<4xi32>, %h: tensor<4xf16>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %x) : tensor<i32>, tensor<4xf32>
     cond {
      %k = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare  LT, %iterArg, %k,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %iterArg, %one : tensor<i32>
      stablehlo.return %n, %iterArg_0 : tensor<i32>, tensor<4xf32>
    }
    %1 = stablehlo.power %i, %i : tensor<4xi32>
    %2 = "stablehlo.sort"(%x) <{dimension = 0 : i64, is_stable = false}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %lt = stablehlo.compare  LT, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<4xf32>) -> tensor<4xf32>
    %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %3 = stablehlo.reduce(%x init: %inf) applies stablehlo.minimum across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
    %4 = stablehlo.custom_call @my_kernel(%x) {backend_config = ""} : (tensor<4xf32>) -> tensor<4xf32>
    %5 = stablehlo.and %i, %i : tensor<4xi32>
    %6 = stablehlo.compare  LT, %x, %x,  TOTALORDER : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
    %7 = "mydialect.frobnicate"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %8 = stablehlo.floor %x : tensor<4xf32>
    return %0#1 : tensor<4xf32>
  }
}
