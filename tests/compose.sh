#!/bin/sh
# Data parallelism composed with Megatron (and ZeRO) on whole
# transformers at small widths (issue 12: the GPT-3 composition of 'make
# bench', checked in 'make check').  For 2, 8, 32 and 64 layers of
# examples/models/transformer.lua (batch 4, seq 8, d_model 32, 4 heads,
# d_ff 64) on the mesh batch=2,model=2, three strategies, the tactic files
# of tests/bench/tactics/:
#   batch-megatron       batch over 'batch', then Megatron over 'model'
#   megatron-batch       Megatron, then batch
#   batch-megatron-zero  batch, Megatron, then ZeRO over 'batch'
# Each result is lowered and its collectives ('partir lower --stats')
# must be exactly these, counted by hand from the model:
#
#   all_reduce over model: 2 per layer.  Megatron splits attention by
#     heads (wq, wk, wv by their head dimension) and the MLP by its
#     hidden width (w1 by columns, b1 with it, w2 by rows).  Each block
#     then ends in one contraction over the split dimension, whose
#     partial sums are added across 'model': the output projection
#     (ctx . wo contracts heads and head size) and the MLP's second
#     matmul (relu(..) . w2 contracts d_ff).  Everything between the
#     blocks (residual adds, layer norms over d_model) is whole on
#     every 'model' device, so nothing else crosses 'model'.
#   nothing over batch in the forward pass: the batch split is of
#     dimension 0 of x and of every activation, and no operation of a
#     layer contracts or reduces dimension 0 (the projections contract
#     d_model, the scores head size, the context the key sequence, the
#     layer norms reduce d_model, the softmax the key sequence).
#   ZeRO (the third strategy) adds all_gather over batch: 12 per layer.
#     tactics/zero.lua splits every parameter (every argument but x)
#     along its first dimension that 2 divides and does not propagate,
#     so each use of a parameter gathers it whole.  A layer has 12
#     parameters (ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w1, b1,
#     w2, b2), each with such a dimension (d_model 32, heads 4 or d_ff
#     64 first), each used once by the layer (transformer.lua), and
#     there are no parameters outside the layers.  It adds no
#     all_reduce: ZeRO splits no computation.
#
# On 2 and 8 layers the result is also run: simulated on the 4 devices
# it computes what the interpreter computes for the partitioned program
# ('lower --simulate'), and the partitioned program computes what the
# original computes on the same seeded inputs ('partir run --seed').
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
tactics=$top/tests/bench/tactics
mesh=batch=2,model=2

# collectives FILE: "KIND AXIS COUNT" per line of the lowered FILE's
# --stats, sorted; "none" when it has none.
collectives() {
  "$PARTIR" lower "$1" --mesh "$mesh" --stats |
    sed -n '/^collectives/,$p' | tail -n +2 |
    awk '$1 == "none" { print "none"; next } { print $1, $3, $4 }' | sort
}

# same_outputs NAME ORIGINAL PARTITIONED: both give the same results on
# inputs seeded alike (within rtol 1e-4, atol 1e-5).
same_outputs() {
  name=$1
  rm -rf "$tmp/want" "$tmp/got"
  if ! "$PARTIR" run "$2" --seed 3 -o "$tmp/want" >/dev/null 2>"$tmp/err" ||
    ! "$PARTIR" run "$3" --seed 3 -o "$tmp/got" >/dev/null 2>>"$tmp/err"; then
    not_ok "$name: runs on seeded inputs"
    show "$tmp/err"
    return
  fi
  want=$(ls "$tmp/want") got=$(ls "$tmp/got")
  if "$FIXTURE_RUNNER" --npy-close "$tmp/got/$got" "$tmp/want/$want" 1e-4 1e-5 \
    >"$tmp/close.tap"; then
    ok "$name: computes what the original computes (seed 3)"
  else
    not_ok "$name: computes what the original computes (seed 3)"
    show "$tmp/close.tap"
  fi
}

for L in 2 8 32 64; do
  prog=$tmp/t$L.pir
  lua5.4 "$top/examples/models/transformer.lua" --layers $L --batch 4 --seq 8 \
    --d_model 32 --heads 4 --d_ff 64 >"$prog"
  for strategy in batch-megatron megatron-batch batch-megatron-zero; do
    name="$strategy, $L layers"
    out=$tmp/$strategy.$L.pir
    if ! "$PARTIR" tactic "$tactics/$strategy.lua" "$prog" --mesh "$mesh" \
      -o "$out" 2>"$tmp/err"; then
      not_ok "$name: the tactic runs"
      show "$tmp/err"
      continue
    fi
    want="all_reduce model $((2 * L))"
    case $strategy in
    *zero) want=$(printf 'all_gather batch %d\n%s' $((12 * L)) "$want") ;;
    esac
    got=$(collectives "$out")
    if [ "$got" = "$want" ]; then
      ok "$name: collectives are exactly $(echo $want)"
    else
      not_ok "$name: collectives are exactly $(echo $want)"
      echo "$got" | sed 's/^/#   got: /'
    fi
    if [ $L -le 8 ]; then
      check "$name: simulated devices agree with the interpreter" \
        quiet "$PARTIR" lower "$out" --mesh "$mesh" --simulate --seed 3
      same_outputs "$name" "$prog" "$out"
    fi
  done
done
done_testing
