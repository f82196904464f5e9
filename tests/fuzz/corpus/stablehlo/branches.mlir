// stablehlo.if and stablehlo.case, written by hand: XLA ran it for
// branches.expected<k>.npy (gen_jax.py) on i = 1.  The indices i + 10
// and i - 10 are out of range (the last branch runs), the case on i
// returns two values, and the if's predicate is computed from x.
func.func public @main(%x: tensor<3xf32>, %i: tensor<i32>) -> (tensor<3xf32>, tensor<i32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %ten = stablehlo.constant dense<10> : tensor<i32>
  %hi = stablehlo.add %i, %ten : tensor<i32>
  %lo = stablehlo.subtract %i, %ten : tensor<i32>
  %0:2 = "stablehlo.case"(%i) ({
    %c = stablehlo.constant dense<100> : tensor<i32>
    stablehlo.return %x, %c : tensor<3xf32>, tensor<i32>
  }, {
    %n = stablehlo.negate %x : tensor<3xf32>
    %c = stablehlo.constant dense<200> : tensor<i32>
    stablehlo.return %n, %c : tensor<3xf32>, tensor<i32>
  }, {
    %e = stablehlo.exponential %x : tensor<3xf32>
    %c = stablehlo.constant dense<300> : tensor<i32>
    stablehlo.return %e, %c : tensor<3xf32>, tensor<i32>
  }) : (tensor<i32>) -> (tensor<3xf32>, tensor<i32>)
  %1 = "stablehlo.case"(%hi) ({
    stablehlo.return %x : tensor<3xf32>
  }, {
    %a = stablehlo.abs %x : tensor<3xf32>
    stablehlo.return %a : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  %2 = "stablehlo.case"(%lo) ({
    stablehlo.return %x : tensor<3xf32>
  }, {
    %t = stablehlo.tanh %x : tensor<3xf32>
    stablehlo.return %t : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  %p = stablehlo.compare GT, %s, %z, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %3 = "stablehlo.if"(%p) ({
    %m = stablehlo.multiply %x, %x : tensor<3xf32>
    stablehlo.return %m : tensor<3xf32>
  }, {
    %y = stablehlo.add %x, %x : tensor<3xf32>
    stablehlo.return %y : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  return %0#0, %0#1, %1, %2, %3 : tensor<3xf32>, tensor<i32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
