// Bitwise operations on ui32, i32 and i1, and reduces over integer 'and'
// and 'or', checking themselves: every expected value is worked out by
// hand in the comment above its check (tests/stablehlo.sh runs it, and
// compiled).  A shift amount is read unsigned; one of the width or more
// shifts every bit out: 0, or the sign in every bit for
// shift_right_arithmetic (ui32's top bit is its sign there).
module @bitwise {
  func.func public @main() -> tensor<i1> {
    %a = stablehlo.constant dense<[4294967295, 1, 2147483648, 12]> : tensor<4xui32>
    %s = stablehlo.constant dense<[1, 31, 32, 3]> : tensor<4xui32>
    // 0xFFFFFFFF << 1 = 0xFFFFFFFE, 1 << 31 = 2^31, << 32: 0, 12 << 3 = 96
    %shl = stablehlo.shift_left %a, %s : tensor<4xui32>
    check.expect_eq_const %shl, dense<[4294967294, 2147483648, 0, 96]> : tensor<4xui32>
    // 0xFFFFFFFF >> 1 = 0x7FFFFFFF, 1 >> 31 = 0, >> 32: 0, 12 >> 3 = 1
    %shrl = stablehlo.shift_right_logical %a, %s : tensor<4xui32>
    check.expect_eq_const %shrl, dense<[2147483647, 0, 0, 1]> : tensor<4xui32>
    // all ones stay all ones; 2^31 >> 32: out, its sign (1) everywhere
    %shra = stablehlo.shift_right_arithmetic %a, %s : tensor<4xui32>
    check.expect_eq_const %shra, dense<[4294967295, 0, 4294967295, 1]> : tensor<4xui32>
    // 1 ^ 31 = 30, 2^31 ^ 32 = 2147483680, 12 ^ 3 = 15
    %xor = stablehlo.xor %a, %s : tensor<4xui32>
    check.expect_eq_const %xor, dense<[4294967294, 30, 2147483680, 15]> : tensor<4xui32>
    %and = stablehlo.and %a, %s : tensor<4xui32>
    check.expect_eq_const %and, dense<[1, 1, 0, 0]> : tensor<4xui32>
    %or = stablehlo.or %a, %s : tensor<4xui32>
    check.expect_eq_const %or, dense<[4294967295, 31, 2147483680, 15]> : tensor<4xui32>
    // ~12 = 0xFFFFFFF3 = 4294967283 (zero-extended: not -13)
    %not = stablehlo.not %a : tensor<4xui32>
    check.expect_eq_const %not, dense<[0, 4294967294, 2147483647, 4294967283]> : tensor<4xui32>
    %pop = stablehlo.popcnt %a : tensor<4xui32>
    check.expect_eq_const %pop, dense<[32, 1, 1, 2]> : tensor<4xui32>
    // of 1: 31 zeros above it; of 12 (0b1100): 28
    %clz = stablehlo.count_leading_zeros %a : tensor<4xui32>
    check.expect_eq_const %clz, dense<[0, 31, 0, 28]> : tensor<4xui32>

    %b = stablehlo.constant dense<[-8, 5, -1, 100]> : tensor<4xi32>
    %t = stablehlo.constant dense<[1, 2, 40, -1]> : tensor<4xi32>
    // -8 >> 1 = -4, 5 >> 2 = 1, -1 >> 40: out, -1; 100 >> -1 (2^32 - 1): 0
    %ar = "stablehlo.shift_right_arithmetic"(%b, %t) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    check.expect_eq_const %ar, dense<[-4, 1, -1, 0]> : tensor<4xi32>
    // 0xFFFFFFF8 >> 1 = 0x7FFFFFFC
    %lr = "stablehlo.shift_right_logical"(%b, %t) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
    check.expect_eq_const %lr, dense<[2147483644, 1, 0, 0]> : tensor<4xi32>
    %l = stablehlo.shift_left %b, %t : tensor<4xi32>
    check.expect_eq_const %l, dense<[-16, 20, 0, 0]> : tensor<4xi32>
    %nb = stablehlo.not %b : tensor<4xi32>
    check.expect_eq_const %nb, dense<[7, -6, 0, -101]> : tensor<4xi32>

    // i1: logical.  p = b < 0, q = t > 1
    %zero = stablehlo.constant dense<0> : tensor<4xi32>
    %one = stablehlo.constant dense<1> : tensor<4xi32>
    %p = stablehlo.compare  LT, %b, %zero,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %q = stablehlo.compare  GT, %t, %one,  SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %pq = stablehlo.and %p, %q : tensor<4xi1>
    check.expect_eq_const %pq, dense<[false, false, true, false]> : tensor<4xi1>
    %porq = stablehlo.or %p, %q : tensor<4xi1>
    check.expect_eq_const %porq, dense<[true, true, true, false]> : tensor<4xi1>
    %pxq = stablehlo.xor %p, %q : tensor<4xi1>
    check.expect_eq_const %pxq, dense<[true, true, false, false]> : tensor<4xi1>
    %np = stablehlo.not %p : tensor<4xi1>
    check.expect_eq_const %np, dense<[false, true, false, true]> : tensor<4xi1>

    // reduces: m = [[12, 10, 255], [6, 3, 240]]
    %m = stablehlo.constant dense<[[12, 10, 255], [6, 3, 240]]> : tensor<2x3xui32>
    // from the identity: 12 & 6 = 4, 10 & 3 = 2, 255 & 240 = 240
    %ones = stablehlo.constant dense<4294967295> : tensor<ui32>
    %r0 = stablehlo.reduce(%m init: %ones) applies stablehlo.and across dimensions = [0] : (tensor<2x3xui32>, tensor<ui32>) -> tensor<3xui32>
    check.expect_eq_const %r0, dense<[4, 2, 240]> : tensor<3xui32>
    // 12 | 10 | 255 = 255, then | 256 = 511; 6 | 3 | 240 = 247, | 256 = 503
    %c256 = stablehlo.constant dense<256> : tensor<ui32>
    %r1 = stablehlo.reduce(%m init: %c256) applies stablehlo.or across dimensions = [1] : (tensor<2x3xui32>, tensor<ui32>) -> tensor<2xui32>
    check.expect_eq_const %r1, dense<[511, 503]> : tensor<2xui32>
    // a region body, init 6: 4 & 6 = 4, 2 & 6 = 2, 240 & 6 = 0
    %c6 = stablehlo.constant dense<6> : tensor<ui32>
    %r2 = "stablehlo.reduce"(%m, %c6) ({
    ^bb0(%x: tensor<ui32>, %y: tensor<ui32>):
      %z = "stablehlo.and"(%x, %y) : (tensor<ui32>, tensor<ui32>) -> tensor<ui32>
      "stablehlo.return"(%z) : (tensor<ui32>) -> ()
    }) {dimensions = array<i64: 0>} : (tensor<2x3xui32>, tensor<ui32>) -> tensor<3xui32>
    check.expect_eq_const %r2, dense<[4, 2, 0]> : tensor<3xui32>
    // i32, init -256 (0xFFFFFF00): 1 | 2 = 3 -> 0xFFFFFF03 = -253;
    // -128 | 3 = 0xFFFFFF83 = -125, which has those bits already
    %n = stablehlo.constant dense<[[1, 2], [-128, 3]]> : tensor<2x2xi32>
    %cm = stablehlo.constant dense<-256> : tensor<i32>
    %r3 = stablehlo.reduce(%n init: %cm) applies stablehlo.or across dimensions = [1] : (tensor<2x2xi32>, tensor<i32>) -> tensor<2xi32>
    check.expect_eq_const %r3, dense<[-253, -125]> : tensor<2xi32>
    %want = stablehlo.constant dense<[-253, -125]> : tensor<2xi32>
    %ok = stablehlo.custom_call @check.eq(%r3, %want) : (tensor<2xi32>, tensor<2xi32>) -> tensor<i1>
    return %ok : tensor<i1>
  }
}
