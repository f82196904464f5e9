# compiled.sh — sourced by the tests of compiled code (tests/codegen.sh,
# tests/ptx.sh, tests/cuda.sh), after tap.sh: what they share.

# tolerance FILE: the relative error allowed to fast arithmetic, (8 + K +
# 8 T) eps of the largest magnitude of each result, where eps is the
# unit of the least precise float type in the program (2^-7 bf16, 2^-10
# f16, 2^-23 f32, 2^-52 f64), K its largest dimension (a bound on any
# sum's length) and T 1 when it holds a transcendental
# (docs/codegen.md).
tolerance() {
  awk '
    /bf16/ { bf = 1 } /(^|[^b])f16/ { h = 1 } /f32/ { f32 = 1 }
    /(exp|log|tanh|logistic|pow|log1p|expm1|sin|cos|erf|erfc)\(/ { t = 1 }
    { s = $0
      while (match(s, /[0-9]+x/)) {
        d = substr(s, RSTART, RLENGTH - 1) + 0; if (d > k) k = d
        s = substr(s, RSTART + RLENGTH) } }
    END { eps = bf ? 2^-7 : h ? 2^-10 : f32 ? 2^-23 : 2^-52
          printf "%.6g\n", (8 + k + 8 * t) * eps }' "$1"
}

# near NAME RUN GOT REL: every .npy of directory RUN (the interpreter's)
# is within REL of its namesake in GOT; else a failure of NAME saying
# which is not, and false.
near() {
  for f in "$2"/*.npy; do
    if ! "${FIXTURE_RUNNER:-$top_builddir/tests/fixture-runner}" --npy-near \
      "$3/$(basename "$f")" "$f" "$4" >"$tmp/near"; then
      not_ok "$1, $(basename "$f") is not within $4"
      show "$tmp/near"
      return 1
    fi
  done
}

# split_kernels DIR: the kernel fixtures (tests/fixtures/kernels.test),
# one program a file, DIR/NAME.pir.
split_kernels() {
  mkdir -p "$1"
  awk -v dir="$1" '
    /^%%RUN / { file = dir "/" $2 ".pir"; copy = 1; next }
    /^%%/ { copy = 0 }
    copy { print > file }' "$top_srcdir/tests/fixtures/kernels.test"
}

# each_tactic FUNC SPEC...: for the 4-layer transformer ($tmp/t4.pir)
# and the MLP example, each partitioned by each SPEC (TACTIC:MESH, a
# file of tactics/), 'FUNC PROGRAM TACTIC MESH FILE' with FILE the
# partitioned program; a tactic that fails is a failure.
each_tactic() {
  func=$1
  shift
  for program in t4 mlp; do
    case $program in
    t4) src=$tmp/t4.pir ;;
    mlp) src=$top_srcdir/examples/mlp.pir ;;
    esac
    for spec in "$@"; do
      if "$PARTIR" tactic "$top_srcdir/tactics/${spec%%:*}.lua" "$src" \
        --mesh "${spec#*:}" -o "$tmp/$program-${spec%%:*}.pir" 2>"$tmp/err"; then
        "$func" "$program" "${spec%%:*}" "${spec#*:}" \
          "$tmp/$program-${spec%%:*}.pir"
      else
        not_ok "$program, ${spec%%:*} on ${spec#*:}: the tactic runs"
        show "$tmp/err"
      fi
    done
  done
}
