// A self-checking file in the style of StableHLO's tests: every check
// operation partir reads, each comparing with values worked out by hand.
// The sum is split over "x" by a constraint, so the checks also check
// the partitioned program ('partir exec' on x=2, a thread a device).
module @checks {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main() -> tensor<i1> {
    %a = stablehlo.constant dense<[1.0, 2.0, 3.0, -4.0]> : tensor<4xf32>
    %b = stablehlo.constant dense<[0.5, 0.25, -1.0, 1.0]> : tensor<4xf32>
    %s0 = stablehlo.add %a, %b : tensor<4xf32>
    %s = sdy.sharding_constraint %s0 <@mesh, [{"x"}]> : tensor<4xf32>
    // 1 + 0.5, 2 + 0.25, 3 - 1, -4 + 1
    %want = stablehlo.constant dense<[1.5, 2.25, 2.0, -3.0]> : tensor<4xf32>
    check.expect_eq %s, %want : tensor<4xf32>
    check.expect_eq_const %s, dense<[1.5, 2.25, 2.0, -3.0]> : tensor<4xf32>
    // a third: 0.333..., not 1/3 exactly; within 1e-4 and one ulp of it
    %three = stablehlo.constant dense<3.0> : tensor<4xf32>
    %third = stablehlo.divide %b, %three : tensor<4xf32>
    check.expect_almost_eq_const %third, dense<[0.1666667, 0.0833333, -0.3333333, 0.3333333]> : tensor<4xf32>
    %near = stablehlo.constant dense<[0.1667, 0.0833, -0.3333, 0.3333]> : tensor<4xf32>
    check.expect_almost_eq %third, %near, tolerance = 1.0e-3 : tensor<4xf32>
    %exact = stablehlo.constant dense<[0.166666672, 0.0833333358, -0.333333343, 0.333333343]> : tensor<4xf32>
    check.expect_close %third, %exact, max_ulp_difference = 1 : tensor<4xf32>, tensor<4xf32>
    stablehlo.custom_call @check.expect_close(%third, %exact) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
    stablehlo.custom_call @check.expect_almost_eq(%third, %near) {has_side_effect = true} : (tensor<4xf32>, tensor<4xf32>) -> ()
    // integers exactly: 7 * [1, 2, 3, 4]
    %i = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %seven = stablehlo.constant dense<7> : tensor<4xi32>
    %p = stablehlo.multiply %i, %seven : tensor<4xi32>
    check.expect_eq_const %p, dense<[7, 14, 21, 28]> : tensor<4xi32>
    %pw = stablehlo.constant dense<[7, 14, 21, 28]> : tensor<4xi32>
    stablehlo.custom_call @check.expect_eq(%p, %pw) {has_side_effect = true} : (tensor<4xi32>, tensor<4xi32>) -> ()
    // the form JAX's tests return: whether the values agree
    %ok = stablehlo.custom_call @check.eq(%s, %want) : (tensor<4xf32>, tensor<4xf32>) -> tensor<i1>
    return %ok : tensor<i1>
  }
}
