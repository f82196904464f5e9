#!/bin/sh
# The examples run, agree with NumPy (tests/fixtures/gen_examples.py made
# the inputs and expected outputs), and the tiled MLP computes what the
# untiled one does.
. "$top_srcdir/tests/tap.sh"
fx=$top_srcdir/tests/fixtures/examples
ex=$top_srcdir/examples

for prog in mlp mlp_tiled; do
  check "$prog runs on the NumPy inputs" quiet \
    $VALGRIND "$PARTIR" run "$ex/$prog.pir" -i x="$fx/mlp.x.npy" \
    -i w="$fx/mlp.w.npy" -i u="$fx/mlp.u.npy" -o "$tmp/$prog"
done
args=
for a in x ln1_g ln1_b wq wk wv wo ln2_g ln2_b w1 b1 w2 b2; do
  args="$args -i $a=$fx/transformer.$a.npy"
done
check "transformer_layer runs on the NumPy inputs" quiet \
  $VALGRIND "$PARTIR" run "$ex/transformer_layer.pir" $args -o "$tmp/tf"

# seeded random inputs: tiled and untiled give identical outputs
check "mlp, seed 7" quiet "$PARTIR" run "$ex/mlp.pir" --seed 7 -o "$tmp/s-mlp"
check "mlp_tiled, seed 7" quiet "$PARTIR" run "$ex/mlp_tiled.pir" --seed 7 -o "$tmp/s-tiled"
check "printed results of tiled and untiled MLP are equal" \
  sh -c "'$PARTIR' run '$ex/mlp.pir' --seed 3 > '$tmp/a' &&
         '$PARTIR' run '$ex/mlp_tiled.pir' --seed 3 > '$tmp/b' &&
         cmp -s '$tmp/a' '$tmp/b' && test -s '$tmp/a'"

# the comparisons print their own TAP lines; renumber them into ours
"$FIXTURE_RUNNER" \
  --npy-close "$tmp/mlp/result0.npy" "$fx/mlp.expected.npy" 1e-5 1e-6 \
  --npy-close "$tmp/mlp_tiled/result0.npy" "$fx/mlp.expected.npy" 1e-5 1e-6 \
  --npy-close "$tmp/tf/out.npy" "$fx/transformer.expected.npy" 1e-5 1e-6 \
  --npy-close "$tmp/s-tiled/result0.npy" "$tmp/s-mlp/result0.npy" 0 0 \
  >"$tmp/close.tap"
while read -r status rest; do
  case $status in
  ok) ok "${rest#* - }" ;;
  not) not_ok "${rest#* * - }" ;;
  esac
done <"$tmp/close.tap"
grep '^#' "$tmp/close.tap"
done_testing
