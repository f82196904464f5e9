# tolerance.sh — sourced by the tests of compiled code (tests/codegen.sh,
# tests/cuda.sh): the relative error allowed to fast arithmetic.
#
# tolerance FILE: (8 + K + 8 T) eps of the largest magnitude of each
# result, where eps is the unit of the least precise float type in the
# program (2^-7 bf16, 2^-10 f16, 2^-23 f32, 2^-52 f64), K its largest
# dimension (a bound on any sum's length) and T 1 when it holds a
# transcendental (docs/codegen.md).
tolerance() {
  awk '
    /bf16/ { bf = 1 } /(^|[^b])f16/ { h = 1 } /f32/ { f32 = 1 }
    /(exp|log|tanh|logistic|pow|log1p|expm1)\(/ { t = 1 }
    { s = $0
      while (match(s, /[0-9]+x/)) {
        d = substr(s, RSTART, RLENGTH - 1) + 0; if (d > k) k = d
        s = substr(s, RSTART + RLENGTH) } }
    END { eps = bf ? 2^-7 : h ? 2^-10 : f32 ? 2^-23 : 2^-52
          printf "%.6g\n", (8 + k + 8 * t) * eps }' "$1"
}
