#!/bin/sh
# Training steps against jax.grad (issue 16, "Correctness"): for every
# step that tests/fixtures/grad/cases lists (six models: the relu MLP of
# examples/models/mlp.lua, a tanh classifier, examples/transformer_layer.pir,
# two models that use every differentiable operator, and an embedding
# lookup under a relu layer (its table's gradient a scatter-add); each loss, sum,
# mse and xent, with each optimizer, sgd, momentum and adam, six of the
# nine pairs for the transformer, whose files are the largest), 'partir
# grad' builds the step, 'partir run' runs it on the inputs that
# tests/fixtures/grad/gen_jax.py wrote, and every result (updated
# parameters, optimizer state, step, loss) must be JAX's.  Then some of
# the steps partitioned, data parallel (tactics/batch.lua on batch=2) and
# batch + Megatron (tests/bench/tactics/batch-megatron.lua on
# batch=2,model=2), compiled and run on threads by 'partir exec'; and the
# model generators' --train, whose steps are the same ones.
#
# Tolerance: |got - want| <= TOL * max|want|, per result, want being the
# step computed in float64 and rounded to float32.  Every step computes
# in float32, whose rounding (2^-24 relative, about 6e-8) accumulates in
# the sums of the forward and backward passes: the error of a sum of n
# terms is up to n * 2^-24 of its terms' magnitudes (typically sqrt(n)
# times), bounded by the largest result rather than by each element
# (hence relative to max|want|).  The longest sums here have 64 terms
# (the transformer's MLP), chained through a few layers forward and
# back: a few 1e-6 in the worst case.  JAX's own float32 steps come
# within 1e-6 of float64 (gen_jax.py asserts 1e-5 and prints the
# largest; partir's interpreter came within 3e-7), so TOL = 1e-5 leaves
# room for rounding in another order, and a wrong derivative (a term or
# factor missing) moves a result by far more.  Compiled code (partir
# exec without --exact) contracts multiply-adds and evaluates exp, log
# and tanh by polynomials good to a few float32 ulps, and the
# partitioned steps sum in another order across devices: EXEC_TOL =
# 1e-4 (they came within 2e-7).
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
fx=$top/tests/fixtures/grad
TOL=1e-5
EXEC_TOL=1e-4

if ! command -v lua5.4 >/dev/null 2>&1; then
  echo "1..0 # SKIP no lua5.4 to generate the MLP"
  exit 0
fi

# inputs MODEL LOSS FILE: '-i NAME=FILE.npy' for each argument of the step
# in FILE: the target of LOSS, else MODEL's file of that name
inputs() {
  sed -n '/^func/{s/)[ ]*->.*//p;q;}' "$3" | grep -o '%[A-Za-z0-9_]*:' |
    tr -d '%:' | while read -r a; do
    if [ "$a" = target ]; then
      printf ' -i target=%s' "$fx/$1.$2.target.npy"
    else
      printf ' -i %s=%s' "$a" "$fx/$1.$a.npy"
    fi
  done
}

# compare WHAT CASE DIR: DIR holds exactly the results JAX has for CASE
# (MODEL.LOSS.OPT), each within $TOL_NOW; the largest error goes into
# $tmp/errors
compare() {
  what=$1 case=$2 dir=$3
  (cd "$dir" && ls) | sed 's/\.npy$//' | sort >"$tmp/got-names"
  (cd "$fx" && ls "$case".*.npy) | sed "s/^$case\.//; s/\.npy\$//" | sort \
    >"$tmp/want-names"
  if ! cmp -s "$tmp/got-names" "$tmp/want-names"; then
    not_ok "$what: the results JAX has"
    diff "$tmp/want-names" "$tmp/got-names" >"$tmp/diff"
    show "$tmp/diff"
    return
  fi
  set --
  while read -r r; do
    set -- "$@" --npy-near "$dir/$r.npy" "$fx/$case.$r.npy" "$TOL_NOW"
  done <"$tmp/want-names"
  if "$FIXTURE_RUNNER" "$@" >"$tmp/near.tap"; then
    ok "$what: $(wc -l <"$tmp/want-names") results within $TOL_NOW of JAX's"
  else
    not_ok "$what: JAX's results within $TOL_NOW"
    grep -A1 '^not ok' "$tmp/near.tap" >"$tmp/bad"
    show "$tmp/bad"
  fi
  sed -n 's/.*largest error \([^ ]*\) of max.*/\1/p' "$tmp/near.tap" |
    sed "s|\$| $what|" >>"$tmp/errors"
}

# step NAME FILE MODEL LOSS OPT [exec MESH]: runs the step FILE on MODEL's
# inputs (interpreted, or compiled on MESH) and compares with JAX's
step() {
  name=$1 file=$2 model=$3 loss=$4 opt=$5
  rm -rf "$tmp/got"
  mkdir -p "$tmp/got"
  if [ "${6:-}" = exec ]; then
    TOL_NOW=$EXEC_TOL
    set -- exec "$file" --mesh "$7"
  else
    TOL_NOW=$TOL
    set -- run "$file"
  fi
  # shellcheck disable=SC2046 # one word per option
  if "$PARTIR" "$@" $(inputs "$model" "$loss" "$file") --output "$tmp/got" \
    >/dev/null 2>"$tmp/err"; then
    compare "$name" "$model.$loss.$opt" "$tmp/got"
  else
    not_ok "$name: runs on JAX's inputs"
    show "$tmp/err"
  fi
}

# the models, then every step interpreted
: >"$tmp/errors"
while read -r kind model line; do
  # shellcheck disable=SC2086 # the line's words
  set -- $line
  case $kind in
  model)
    src=$1
    shift
    case $src in
    *.lua) lua5.4 "$top/$src" "$@" >"$tmp/$model.pir" ;;
    *) cp "$top/$src" "$tmp/$model.pir" ;;
    esac
    ;;
  step)
    loss=$1 opt=$2 lr=$3
    out=$tmp/$model.$loss.$opt.pir
    if "$PARTIR" grad "$tmp/$model.pir" --loss "$loss" --optimizer "$opt" \
      --lr "$lr" -o "$out" 2>"$tmp/err"; then
      step "$model $loss $opt" "$out" "$model" "$loss" "$opt"
    else
      not_ok "$model $loss $opt: partir grad"
      show "$tmp/err"
    fi
    ;;
  esac
done <"$fx/cases"

# partitioned and compiled: data parallel over batch (the data is the
# model's input and the target), then batch + Megatron.  The MLP only
# with mse: its 3 layers leave the last one's output split by columns
# over 'model', and batch-megatron.lua fails on its steps with the other
# losses (xent: propagate cannot carry the split through reduce_max over
# the classes; sum: "'slice-sum' would bind axis "model" inside a region
# over it"); the 2-layer classifier has no split left
tactics=$top/tests/bench/tactics
for s in mlp.mse.adam mlp.mse.momentum classifier.xent.adam \
  classifier.sum.sgd transformer.mse.adam transformer.xent.sgd; do
  model=${s%%.*} rest=${s#*.}
  loss=${rest%.*} opt=${rest#*.}
  set -- x
  [ "$loss" = sum ] || set -- x,target
  for t in "batch batch=2 $top/tactics/batch.lua" \
    "batch-megatron batch=2,model=2 $tactics/batch-megatron.lua"; do
    # shellcheck disable=SC2086 # three words
    set -- "$1" $t
    out=$tmp/$s.$2.pir
    if "$PARTIR" tactic "$4" "$tmp/$s.pir" --mesh "$3" --set "inputs=$1" \
      -o "$out" 2>"$tmp/err"; then
      step "$model $loss $opt, $2 on $3, compiled" "$out" "$model" "$loss" \
        "$opt" exec "$3"
    else
      not_ok "$model $loss $opt: the $2 tactic"
      show "$tmp/err"
    fi
  done
done

# the embedding model data parallel: its ids and target split over batch,
# the table's gradient a sum of each device's scatter-add (one
# all_reduce); batch-megatron.lua fails on its steps as on the MLP's
# ("'slice-sum' would bind axis "model" inside a region over it")
for s in embedding.mse.adam embedding.xent.sgd embedding.sum.momentum; do
  rest=${s#*.}
  loss=${rest%.*} opt=${rest#*.}
  inputs=ids,target
  [ "$loss" = sum ] && inputs=ids
  out=$tmp/$s.batch.pir
  if "$PARTIR" tactic "$top/tactics/batch.lua" "$tmp/$s.pir" --mesh batch=2 \
    --set "inputs=$inputs" -o "$out" 2>"$tmp/err"; then
    step "embedding $loss $opt, batch on batch=2, compiled" "$out" embedding \
      "$loss" "$opt" exec batch=2
  else
    not_ok "embedding $loss $opt: the batch tactic"
    show "$tmp/err"
  fi
done

# the model generators' --train: the same steps as 'partir grad' of the
# model they print
gen=$top/examples/models
if PARTIR=$PARTIR lua5.4 "$gen/mlp.lua" --layers 3 --batch 8 --width 16 \
  --train --loss xent --optimizer momentum --lr 0.1 >"$tmp/gen.pir" \
  2>"$tmp/err"; then
  step "mlp.lua --train --loss xent --optimizer momentum" "$tmp/gen.pir" \
    mlp xent momentum
else
  not_ok "mlp.lua --train"
  show "$tmp/err"
fi
# transformer.lua names layer 0's weights l0_*: the fixtures' names
# are the example's
if PARTIR=$PARTIR lua5.4 "$gen/transformer.lua" --train --loss mse \
  --optimizer adam >"$tmp/gen.pir" 2>"$tmp/err"; then
  sed 's/\([%_]\)l0_/\1/g' "$tmp/gen.pir" >"$tmp/gen-renamed.pir"
  step "transformer.lua --train --loss mse --optimizer adam" \
    "$tmp/gen-renamed.pir" transformer mse adam
else
  not_ok "transformer.lua --train"
  show "$tmp/err"
fi

# a bad option fails with partir's reason, printing no program
if PARTIR=$PARTIR lua5.4 "$gen/mlp.lua" --train --loss hinge >"$tmp/gen.pir" \
  2>"$tmp/err"; then
  not_ok "mlp.lua --train --loss hinge fails"
else
  check "mlp.lua --train --loss hinge: partir's reason, no program" \
    grep -q "the loss is sum, mse or xent, not 'hinge'" "$tmp/err"
  [ -s "$tmp/gen.pir" ] && not_ok "mlp.lua --train --loss hinge printed a program"
fi

echo "# largest errors (of max|want|), interpreted and compiled:"
grep -v compiled "$tmp/errors" | sort -g -r | head -n 1 | sed 's/^/#   /'
grep compiled "$tmp/errors" | sort -g -r | head -n 1 | sed 's/^/#   /'
done_testing
