#!/bin/sh
# StableHLO import (docs/stablehlo.md).  What JAX exports from the
# project's models, and hand-written files that XLA itself ran, must
# import and compute what JAX/XLA computed (tests/fixtures/stablehlo/
# gen_jax.py made the fixtures; no JAX is needed here); the generic and
# pretty forms import alike; every command takes .mlir; partitioning an
# import works; the shardings of JAX's sharded exports partition it as
# they say; a file's checks check it; every operation partir cannot
# express is listed in one error; bad input gets a positioned error,
# never a crash.
. "$top_srcdir/tests/tap.sh"
fx=$top_srcdir/tests/fixtures/stablehlo
ex_fx=$top_srcdir/tests/fixtures/examples
ex=$top_srcdir/examples

# arg_names FILE: the arguments of the program FILE imports to, in order.
arg_names() {
  "$PARTIR" import "$1" | sed -n '1{s/^func @[^(]*(//;s/) ->.*//;p;}' |
    tr ',' '\n' | sed 's/^ *%//;s/:.*//'
}

# inputs FILE NPY...: '-i NAME=NPY' for each argument of FILE, in order.
inputs() {
  f=$1
  shift
  for name in $(arg_names "$f"); do
    printf ' -i %s=%s' "$name" "$1"
    shift
  done
}

# near GOT WANT REL DESC: every element of GOT within REL times the
# largest magnitude of WANT (integers, NaN and infinities exactly), as
# one TAP line of ours.
near() {
  if "$FIXTURE_RUNNER" --npy-near "$1" "$2" "$3" >"$tmp/near" 2>&1 &&
    grep -q '^ok' "$tmp/near"; then
    ok "$4"
  else
    not_ok "$4"
    show "$tmp/near"
  fi
}

# ---------------------------------------------- JAX's models, JAX's values
# Tolerance: every element within 1e-5 of the largest magnitude of JAX's
# result (JAX accumulates its products in f32, partir in double; both
# round each result to f32, docs/language.md); what XLA ran of the
# hand-written files (integers, i1, constants) exactly.
model_inputs() {
  case $1 in
  mlp) echo "$ex_fx/mlp.x.npy $ex_fx/mlp.w.npy $ex_fx/mlp.u.npy" ;;
  transformer_layer)
    for a in x ln1_g ln1_b wq wk wv wo ln2_g ln2_b w1 b1 w2 b2; do
      printf '%s ' "$ex_fx/transformer.$a.npy"
    done
    ;;
  mlp_relu) echo "$fx/mlp_relu.x.npy $fx/mlp_relu.w0.npy $fx/mlp_relu.w1.npy" ;;
  mlp_train_step)
    echo "$fx/mlp_train_step.x.npy $fx/mlp_train_step.y.npy" \
      "$fx/mlp_train_step.w0.npy $fx/mlp_train_step.w1.npy"
    ;;
  ops)
    for a in x y w b p i; do printf '%s ' "$fx/ops.$a.npy"; done
    ;;
  types_ops)
    for a in x y a b u h s v; do printf '%s ' "$fx/types_ops.$a.npy"; done
    ;;
  constants) echo "$fx/constants.x.npy" ;;
  torch_xla) echo "$fx/torch_xla.b.npy $fx/torch_xla.w.npy $fx/torch_xla.x.npy" ;;
  embed)
    for a in ids table w pos; do printf '%s ' "$fx/embed.$a.npy"; done
    ;;
  batched_lookup) echo "$fx/batched_lookup.tables.npy $fx/batched_lookup.ids.npy" ;;
  threefry) echo "$fx/threefry.key_data.npy" ;;
  dropout) echo "$fx/dropout.key_data.npy $fx/dropout.x.npy" ;;
  losses) echo "$fx/losses.x.npy" ;;
  rope) echo "$fx/rope.x.npy $fx/rope.pos.npy" ;;
  argminmax) echo "$fx/argminmax.x.npy $fx/argminmax.k.npy" ;;
  loops) echo "$fx/loops.x.npy $fx/loops.ws.npy" ;;
  gelu_erf) echo "$fx/gelu_erf.x.npy" ;;
  composite) echo "$fx/composite.x.npy" ;;
  erf_inv) echo "$fx/erf_inv.x.npy" ;;
  branches) echo "$fx/branches.x.npy $fx/branches.i.npy" ;;
  conds) echo "$fx/conds.x.npy $fx/conds.i.npy" ;;
  windows) echo "$fx/windows.x.npy $fx/windows.k.npy" ;;
  moments) echo "$fx/moments.x.npy" ;;
  cnn)
    for a in x y k1 k2 k3 w; do printf '%s ' "$fx/cnn.$a.npy"; done
    ;;
  sorting) echo "$fx/sorting.x.npy $fx/sorting.k.npy $fx/sorting.v.npy" ;;
  sorting_topk) echo "$fx/sorting_topk.x.npy" ;;
  updates)
    for a in x v m k i; do printf '%s ' "$fx/updates.$a.npy"; done
    ;;
  torch_xla_cnn)
    for a in x k scale shift k1 w b; do printf '%s ' "$fx/torch_xla_cnn.$a.npy"; done
    ;;
  batch_norm)
    for a in x scale offset mean var dy; do printf '%s ' "$fx/batch_norm.$a.npy"; done
    ;;
  sort_capture) echo "$fx/sort_capture.x.npy" ;;
  torch_argmax) echo "$fx/torch_argmax.x.npy" ;;
  torch_xla_attention)
    for a in x w b wo; do printf '%s ' "$fx/torch_xla_attention.$a.npy"; done
    ;;
  torch_mha)
    for a in b w wo x; do printf '%s ' "$fx/torch_mha.$a.npy"; done
    ;;
  torch_take) echo "$fx/torch_take.t.npy $fx/torch_take.logits.npy $fx/torch_take.u.npy $fx/torch_take.idx.npy" ;;
  esac
}

# run_model NAME FILE REL: runs FILE on NAME's inputs and compares each
# result with NAME.expected<k>.npy (the results' files are named as
# 'partir run' prints them, in order).
run_model() {
  name=$1 file=$2
  out=$tmp/run-$(basename "$file")
  # shellcheck disable=SC2046 # word splitting wanted: the -i options
  if $VALGRIND "$PARTIR" run "$file" $(inputs "$file" $(model_inputs "$name")) \
    -o "$out" >"$tmp/stdout" 2>"$tmp/err"; then
    ok "$(basename "$file") runs on $name's inputs"
  else
    not_ok "$(basename "$file") runs on $name's inputs"
    show "$tmp/err"
    return
  fi
  k=0
  for result in $(sed -n 's/^\([^ []*\) = .*/\1/p' "$tmp/stdout"); do
    near "$out/$result.npy" "$fx/$name.expected$k.npy" "$3" \
      "$(basename "$file") result $k is what JAX/XLA computed"
    k=$((k + 1))
  done
  check "$(basename "$file"): as many results as JAX/XLA gave" \
    test "$k" -eq "$(find "$fx" -name "$name.expected*.npy" | wc -l)"
}

# batch_split NAME FILE WHAT: the batch tactic on FILE over batch=2 into
# $tmp/NAME.pir (checked as "tactic batch.lua on WHAT"), and its lowered
# --stats in $tmp/NAME.stats, for the caller's checks.
batch_split() {
  check "tactic batch.lua on $3" quiet \
    "$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$2" --mesh batch=2 \
    -o "$tmp/$1.pir"
  "$PARTIR" lower "$tmp/$1.pir" --mesh batch=2 --stats >"$tmp/$1.stats" 2>&1
}

# split_runs NAME FILE MODEL WHOSE: $tmp/NAME.pir compiled on two threads
# on MODEL's inputs; each result within 1e-5 of MODEL's expected one
# ("...its result k is WHOSE").
split_runs() {
  check "...and runs compiled on two threads" \
    sh -c "'$PARTIR' exec '$tmp/$1.pir' --mesh batch=2 $(inputs "$2" $(model_inputs "$3")) -o '$tmp/$1' >/dev/null"
  k=0
  while [ -f "$fx/$3.expected$k.npy" ]; do
    near "$tmp/$1/result$k.npy" "$fx/$3.expected$k.npy" 1e-5 \
      "...its result $k is $4"
    k=$((k + 1))
  done
}

# embed: table[ids] (a gather; ids out of range both ways) and a
# dynamic_slice at a start that XLA clamps; batched_lookup: vmap of a
# lookup, a gather with batching dims; losses: logsumexp and isfinite
# over infinities and a NaN (is_finite); rope: sine and cosine of
# angles up to 4095; argminmax: jnp.argmax and argmin (a reduce of two
# inputs) with ties, -inf and NaN; loops: fori_loop and a scan over
# stacked layers (while loops, unrolled); gelu_erf: erf (a composite,
# computed by partir's erf), the exact GELU and tan; conds: lax.cond on
# the data and lax.switch (stablehlo.case, both branches computed and
# one selected); windows: reduce_window (cumulative sums, products,
# maxima and minima, pooling, reverse); moments: jnp.var, std, square;
# cnn: a CNN's loss and gradients (convolutions strided, padded,
# depthwise and dilated; their gradients' lhs_dilation, batch groups and
# reversed kernels); sorting, sorting_topk: sort by JAX's comparators, argsort,
# median, top_k (ties, NaN, -0); updates: x.at[...].set (scatter with a
# region returning its update)
for name in mlp mlp_relu mlp_train_step transformer_layer embed \
  batched_lookup losses rope argminmax loops gelu_erf conds windows \
  moments cnn sorting sorting_topk updates; do
  for form in mlir generic.mlir debug.mlir; do
    run_model "$name" "$fx/$name.$form" 1e-5
  done
done
run_model gelu_erf "$fx/gelu_erf.export.mlir" 1e-5
# f16, i8, i16, ui8, ui32 and the operators that came with them
# (types_ops in gen_jax.py): integers and i1 exactly, floats within 1e-6
# of the largest magnitude (XLA's f32 log1p, expm1 and products round
# differently, and XLA keeps h * h in f32 before adding h)
for form in mlir generic.mlir debug.mlir; do
  run_model types_ops "$fx/types_ops.$form" 1e-6
done
run_model ops "$fx/ops.pretty.mlir" 1e-6
run_model ops "$fx/ops.generic.mlir" 1e-6
run_model constants "$fx/constants.mlir" 0
run_model composite "$fx/composite.mlir" 1e-6
# erf_inv: XLA's polynomial, operation for operation: its values
run_model erf_inv "$fx/erf_inv.mlir" 1e-7
# if and case with two results, indices out of range both ways
run_model branches "$fx/branches.mlir" 1e-6
run_model torch_xla "$fx/torch_xla.mlir" 1e-6
# a ResNet-style block as xm.get_stablehlo prints it: NCHW convolutions,
# max pooling with padding, a tuple of results and get_tuple_element
run_model torch_xla_cnn "$fx/torch_xla_cnn.mlir" 1e-5
# torch-xla's normalizations (LayerNorm as batch_norm_training of a
# 1 x rows x width view, BatchNorm2d.eval() as batch_norm_inference, and
# batch_norm_grad) and its custom calls @mhlo.erf and @mhlo.tan
run_model batch_norm "$fx/batch_norm.mlir" 1e-5
# a sort comparator using constants from outside it (jax.export's
# jnp.sort): exactly XLA's order, -0 and 0 as equals, NaN last
run_model sort_capture "$fx/sort_capture.mlir" 0
# torch.max(dim) and argmin as torch-xla writes their reduce: XLA's
# values and indices exactly (ties to the smaller index, -inf)
run_model torch_argmax "$fx/torch_argmax.mlir" 0
# torch-xla's attention: each product over [batch x heads] imported as
# the product over batch and heads, so Megatron's split of the heads
# reaches through it: every operator split in two (half the FLOPs a
# device) and the one all_reduce of the output projection, no gather
ta=$fx/torch_xla_attention.mlir
run_model torch_xla_attention "$ta" 1e-5
check "torch-xla's attention: both products batched over batch and heads" \
  test "$("$PARTIR" import "$ta" | grep -c 'lhs_batch = \[0, 1\]')" -eq 2
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$ta" --mesh model=2 \
  -o "$tmp/ta.pir" 2>"$tmp/err"
whole=$("$PARTIR" cost "$ta" --mesh model=2 --hw h100x8 | awk '$1 == "FLOPs" { print $2 }')
"$PARTIR" cost "$tmp/ta.pir" --mesh model=2 --hw h100x8 |
  awk '$1 == "FLOPs" { printf "%s", $2 } $1 ~ /^all_/ { printf ", %s %s", $1, $4 }' \
  >"$tmp/ta.cost"
check "...Megatron on model=2: half the FLOPs a device, one all_reduce" \
  test "$(cat "$tmp/ta.cost")" = "$((whole / 2)), all_reduce 1"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/ta.pir" --mesh model=2 --simulate
# nn.MultiheadAttention's products over [seq, batch x heads, hd], the
# batch merged with the heads by a view of q, k, v (hlo_unmerge): each
# value from that view up to the output's view back is imported over
# batch and heads apart, so Megatron's split of the heads crosses it:
# the in_proj's slices split by columns (sink-slice through the
# unflatten to [..., 3, d]), no gather, one all_reduce of the 8 x 8
# output (256 B sent), and exactly half the FLOPs a device: 2848 of 5696
# (in_proj 2*8*8*24 = 3072, its bias 192, q's scale 64, scores and
# context 2*4*4*4*4 = 512 each, softmax 5*64 = 320, out_proj 2*8*8*8 =
# 1024: every one of them split by the heads)
# costs FILE MESH: "FLOPs a device, kind count bytes sent" of each
# collective, as the cost model on h100x8 reports them
costs() {
  "$PARTIR" cost "$1" --mesh "$2" --hw h100x8 |
    awk '$1 == "FLOPs" { printf "%s", $2 } $1 ~ /^all_/ { printf ", %s %s %s", $1, $4, $5 }'
}
tm=$fx/torch_mha.mlir
run_model torch_mha "$tm" 1e-5
check "torch-xla's MultiheadAttention: its products batched over batch and heads apart" \
  test "$("$PARTIR" import "$tm" | grep -c 'lhs_batch = \[0, 1\]')" -eq 2
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tm" --mesh model=2 \
  -o "$tmp/tm.pir" 2>"$tmp/err"
costs "$tmp/tm.pir" model=2 >"$tmp/tm.cost"
check "...Megatron on model=2: 2848 FLOPs a device, one all_reduce of 256 B" \
  test "$(cat "$tmp/tm.cost")" = "2848, all_reduce 1 256"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/tm.pir" --mesh model=2 --simulate
# its input is sequence-first, [seq 4, batch 2, d 8], viewed as
# [seq x batch, d] for the projections: each value from that view is
# imported over seq and batch apart, so a split of the batch (dimension
# 1) crosses it: half the FLOPs a device and no collective; then
# Megatron over model on top: a quarter, and the one all_reduce of
# half the output (128 B)
"$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$tm" --mesh batch=2 \
  --set dim=1 -o "$tmp/tmb.pir" 2>"$tmp/err"
costs "$tmp/tmb.pir" batch=2 >"$tmp/tmb.cost"
check "...batch along its dimension 1 (sequence-first): 2848 FLOPs a device, no collective" \
  test "$(cat "$tmp/tmb.cost")" = "2848"
cat >"$tmp/bdim-m.lua" <<'LUA'
local batch, megatron = require "batch", require "megatron"
return function(s, mesh, opts)
  return megatron(batch(s, mesh, { dim = opts.dim }), mesh, {})
end
LUA
"$PARTIR" tactic "$tmp/bdim-m.lua" "$tm" --mesh batch=2,model=2 --set dim=1 \
  -o "$tmp/tmbm.pir" 2>"$tmp/err"
costs "$tmp/tmbm.pir" batch=2,model=2 >"$tmp/tmbm.cost"
check "...then Megatron: 1424 FLOPs a device, one all_reduce of 128 B" \
  test "$(cat "$tmp/tmbm.cost")" = "1424, all_reduce 1 128"
check "...and its 4 devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/tmbm.pir" --mesh batch=2,model=2 --simulate
# torch.gather (cross_entropy's pick of the target's log-probability)
# and scatter_add, whose indices concatenate the position with the
# data: the position is a batching dimension (batched.c), so a split of
# the batch crosses the gather, and the batch of the scatter's updates
# is a sum.  The data: the targets and the logits (the updates and
# their indices reach no result dimension: the scatter sums them).
tk=$fx/torch_take.mlir
run_model torch_take "$tk" 1e-6
check "torch-xla's gather and scatter at (position, index): batching dimensions" \
  test "$("$PARTIR" import "$tk" | grep -c 'operand_batching_dims = \[0\], .*start_indices_batching_dims = \[0\]\|input_batching_dims = \[1\], .*scatter_indices_batching_dims = \[1\]')" -eq 2
cat >"$tmp/data.lua" <<'LUA'
return function(s)
  local names = {}
  for _, a in ipairs(s:data_args()) do names[#names + 1] = a.name end
  io.stderr:write("data: " .. table.concat(names, " ") .. "\n")
  return s
end
LUA
check "...its data: the targets and the logits" \
  sh -c "'$PARTIR' tactic '$tmp/data.lua' '$tk' --mesh batch=2 -o /dev/null 2>&1 | grep -qx 'data: t logits'"
batch_split tk-b2 "$tk" "the cross entropy and scatter"
# per device: the loss of 2 rows, none sent (the scatter, of no data,
# whole on each device)
check "...its loss split over the batch, no collective" \
  sh -c "grep -q 'partir.tile 0 .*@\"batch\"' '$tmp/tk-b2.pir' &&
         grep -Eq '^  none$' '$tmp/tk-b2.stats'"
split_runs tk-b2 "$tk" torch_take "XLA's"
# every input split by its rows: the scatter of each device's updates
# into zeros, summed: one all_reduce of the 3 x 6 result (72 B)
"$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$tk" --mesh batch=2 \
  --set inputs=t,logits,u,idx -o "$tmp/tk-all.pir" 2>"$tmp/err"
costs "$tmp/tk-all.pir" batch=2 >"$tmp/tk-all.cost"
check "...every input split by rows: the scatter's sum, one all_reduce of 72 B" \
  sh -c "grep -q ', all_reduce 1 72$' '$tmp/tk-all.cost'"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/tk-all.pir" --mesh batch=2 --simulate
tx=$fx/torch_xla_cnn.mlir
batch_split tx-b2 "$tx" "torch-xla's CNN"
check "...both results tiled over batch, and no collective" \
  sh -c "test \$(grep -c 'partir.tile 0 .*@\"batch\"' '$tmp/tx-b2.pir') -eq 2 &&
         grep -Eq '^  none$' '$tmp/tx-b2.stats'"
split_runs tx-b2 "$tx" torch_xla_cnn "XLA's"
# Megatron on the CNN: each convolution is imported as products over
# the kernel's window positions, each with a slice of the kernel; the
# slices are one weight, so the convolutions are split by output
# channels (4 -> 2 a device) and the classifier by its input features,
# summed once: one all_reduce of the 2 x 5 logits (40 B), and half of
# every FLOP but the classifier's bias, added after the sum on every
# device (10): (35858 - 10) / 2 + 10 = 17934
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tx" --mesh model=2 \
  -o "$tmp/tx-m2.pir" 2>"$tmp/err"
costs "$tmp/tx-m2.pir" model=2 >"$tmp/tx-m2.cost"
check "torch-xla's CNN under Megatron: its convolutions split by channels, 17934 FLOPs a device, one all_reduce of 40 B" \
  test "$(cat "$tmp/tx-m2.cost")" = "17934, all_reduce 1 40"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/tx-m2.pir" --mesh model=2 --simulate
# JAX's threefry (gen_threefry.py: split, fold_in, bits, randint): xor,
# shifts, or and adds on ui32; partir's bits are JAX's, interpreted and
# compiled
run_model threefry "$fx/threefry.mlir" 0
# jax.random.uniform, a dropout mask and jax.random.normal (erf_inv),
# lowered for the CPU: threefry in while loops (unrolled), the float
# from its bits by bitcast_convert;
# within an ulp of the largest (XLA contracts the scaling into a
# multiply-add and divides by 0.75 as a multiply)
run_model dropout "$fx/dropout.mlir" 1e-6
"$PARTIR" exec "$fx/threefry.mlir" -i "arg0=$fx/threefry.key_data.npy" \
  -o "$tmp/threefry.exec" >/dev/null 2>"$tmp/err"
for k in 0 1 2; do
  near "$tmp/threefry.exec/result$k.npy" "$fx/threefry.expected$k.npy" 0 \
    "threefry.mlir compiled: result $k is JAX's bits"
done

# ------------------------------------------------------- the two forms
check "ops.pretty.mlir and ops.generic.mlir (MLIR's generic print) compute alike" \
  sh -c "'$PARTIR' run '$fx/ops.pretty.mlir' --seed 5 >'$tmp/p' &&
         '$PARTIR' run '$fx/ops.generic.mlir' --seed 5 >'$tmp/g' &&
         test -s '$tmp/p' && cmp -s '$tmp/p' '$tmp/g'"
for name in mlp_train_step transformer_layer; do
  check "$name: the pretty and generic exports compute alike" \
    sh -c "'$PARTIR' run '$fx/$name.mlir' --seed 5 >'$tmp/p' &&
           '$PARTIR' run '$fx/$name.generic.mlir' --seed 5 >'$tmp/g' &&
           test -s '$tmp/p' && cmp -s '$tmp/p' '$tmp/g'"
done

# ------------------------------------------------- names and locations
"$PARTIR" import "$fx/mlp.debug.mlir" >"$tmp/mlp.pir" 2>"$tmp/err"
check "the arguments take the names of their locations (loc(\"x\"))" \
  grep -q '^func @main(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>, %u: tensor<256x256xf32>)' "$tmp/mlp.pir"
check "an operation's location is a comment: its name and where in the model" \
  grep -qF '// jit(mlp)/dot_general at tests/fixtures/stablehlo/gen_jax.py:' "$tmp/mlp.pir"
check "the source's value names are kept (%cst_0), numbered ones are not" \
  sh -c "'$PARTIR' import '$fx/transformer_layer.mlir' | grep -q '^  %cst_0 = constant'"
check "an inlined function's names carry its name (%relu.cst)" \
  sh -c "'$PARTIR' import '$fx/mlp_relu.mlir' | grep -q '%relu.cst = constant'"
check "the import parses back as .pir and prints the same (but the comments)" \
  sh -c "'$PARTIR' import '$fx/transformer_layer.debug.mlir' -o '$tmp/tf.pir' &&
         '$PARTIR' fmt '$tmp/tf.pir' >'$tmp/tf2.pir' &&
         sed 's|  // .*||' '$tmp/tf.pir' | cmp -s - '$tmp/tf2.pir'"
check "the exact .pir text of the constants" \
  sh -c "'$PARTIR' import '$fx/constants.mlir' | diff -u '$fx/constants.pir' - >'$tmp/diff'"

# ------------------------------------------- every command takes .mlir
relu=$fx/mlp_relu.mlir
check "check FILE.mlir" quiet "$PARTIR" check "$relu"
check "a StableHLO file named otherwise is recognized by its text" \
  sh -c "cp '$relu' '$tmp/model.txt' && '$PARTIR' check '$tmp/model.txt' >/dev/null"
check "rewrite FILE.mlir" quiet "$PARTIR" rewrite "$relu" --do 'arg-tile 0 0 8; propagate'
check "lower FILE.mlir" quiet "$PARTIR" lower "$relu" --mesh model=2
check "cost FILE.mlir" quiet "$PARTIR" cost "$relu" --mesh model=2
check "exec FILE.mlir (compiled) agrees with JAX" \
  sh -c "'$PARTIR' exec '$relu' $(inputs "$relu" $(model_inputs mlp_relu)) -o '$tmp/exec' >/dev/null"
near "$tmp/exec/result0.npy" "$fx/mlp_relu.expected0.npy" 1e-5 \
  "exec's result is what JAX computed"
# the new types and operators compiled: exact arithmetic gives the
# interpreter's bytes, fast arithmetic JAX's values within 1e-3 of each
# result's largest magnitude (f16 is computed in f32 there)
to=$fx/types_ops.mlir
types_in=$(inputs "$to" $(model_inputs types_ops))
check "types_ops compiled with --exact: the interpreter's results, bit for bit" \
  sh -c "'$PARTIR' run '$to' $types_in -o '$tmp/to-run' >/dev/null &&
         '$PARTIR' exec '$to' --exact $types_in -o '$tmp/to-exact' >/dev/null &&
         for f in '$tmp'/to-run/*.npy; do cmp -s \"\$f\" '$tmp/to-exact/'\$(basename \"\$f\") || exit 1; done"
"$PARTIR" exec "$to" $types_in -o "$tmp/to-fast" >/dev/null 2>&1
for k in 0 5 6 7 9 24 26 35 40 41; do
  near "$tmp/to-fast/result$k.npy" "$fx/types_ops.expected$k.npy" 1e-3 \
    "types_ops compiled (fast): result $k is what JAX computed"
done
check "partir-repl FILE.mlir" \
  sh -c "echo 'arg-tile 0 0 8. propagate.' | '$PARTIR_REPL' '$relu' >'$tmp/repl' 2>&1 &&
         grep -q 'partir.tile' '$tmp/repl'"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"reset","params":{"path":"'"$relu"'","mesh":"model=2"}}' |
  "$PARTIR_REPL" --json --allow "$fx" >"$tmp/proto" 2>&1
check "the protocol's reset takes a .mlir path" \
  sh -c "grep -q '\"result\"' '$tmp/proto' && ! grep -q '\"error\"' '$tmp/proto'"

# ------------------------------------- partitioning a JAX export (Megatron)
check "tactic megatron.lua on the JAX export" quiet \
  "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$relu" --mesh model=2 \
  -o "$tmp/mega.pir"
"$PARTIR" lower "$tmp/mega.pir" --mesh model=2 --stats >"$tmp/stats" 2>&1
check "...lowers on model=2 with exactly one all_reduce" \
  grep -Eq '^  all_reduce over model +1 ' "$tmp/stats"
check "...and computes what JAX computed" \
  sh -c "'$PARTIR' run '$tmp/mega.pir' $(inputs "$relu" $(model_inputs mlp_relu)) -o '$tmp/mega' >/dev/null"
near "$tmp/mega/result0.npy" "$fx/mlp_relu.expected0.npy" 1e-5 \
  "...its result is JAX's"
# JAX's transformer layer: its einsums contract the q, k, v projections
# as left operands; Megatron finds them there too and gives a layer's
# two all_reduces (attention, MLP) and nothing else, where it gave three
# and a shard when it looked only at right operands
tf=$fx/transformer_layer.mlir
check "tactic megatron.lua on JAX's transformer layer" quiet \
  "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tf" --mesh model=2 \
  -o "$tmp/mega-tf.pir"
"$PARTIR" lower "$tmp/mega-tf.pir" --mesh model=2 --stats >"$tmp/stats-tf" 2>&1
check "...lowers on model=2 with exactly two all_reduces and no other collective" \
  sh -c "grep -Eq '^  all_reduce over model +2 ' '$tmp/stats-tf' &&
         test \$(grep -Ec '^  [a-z_]+ over ' '$tmp/stats-tf') -eq 1"
check "...and computes what JAX computed" \
  sh -c "'$PARTIR' run '$tmp/mega-tf.pir' $(inputs "$tf" $(model_inputs transformer_layer)) -o '$tmp/mega-tf' >/dev/null"
near "$tmp/mega-tf/result0.npy" "$fx/transformer_layer.expected0.npy" 1e-5 \
  "...its result is JAX's"

# JAX's CNN training step, data parallel: each device convolves its
# half of the batch; the loss and the four gradients are all-reduced,
# and the compiled program on two threads gives JAX's values
cnn=$fx/cnn.mlir
batch_split cnn-b2 "$cnn" "JAX's CNN training step"
check "...lowers on batch=2 with five all_reduces and no other collective" \
  sh -c "grep -Eq '^  all_reduce over batch +5 ' '$tmp/cnn-b2.stats' &&
         test \$(grep -Ec '^  [a-z_]+ over ' '$tmp/cnn-b2.stats') -eq 1"
split_runs cnn-b2 "$cnn" cnn "JAX's"

# JAX's SGD step of the 2-layer MLP (x 8x32, y 8x16, w1 32x32, w2 32x16):
# data parallel on batch=2 all-reduces the two gradients and the loss
# (ring over 2: half of 4096 + 2048 + 4 B each way, 6148 B sent);
# Megatron on model=2 sums the forward's row-parallel output once (8x16
# f32, 512 B sent) and needs nothing in the backward (x's gradient is
# not computed; w1's and w2's stay split as the weights are)
ts=$fx/mlp_train_step.mlir
"$PARTIR" tactic "$top_srcdir/tactics/batch.lua" "$ts" --mesh batch=2 -o "$tmp/ts-b.pir" 2>/dev/null
"$PARTIR" cost "$tmp/ts-b.pir" --mesh batch=2 >"$tmp/ts-b.cost" 2>&1
check "a JAX training step, data parallel: 3 all_reduces over batch, 6148 B" \
  grep -Eq '^  all_reduce +batch +2 +3  6148 B' "$tmp/ts-b.cost"
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$ts" --mesh model=2 -o "$tmp/ts-m.pir" 2>/dev/null
"$PARTIR" cost "$tmp/ts-m.pir" --mesh model=2 >"$tmp/ts-m.cost" 2>&1
check "...Megatron: one all_reduce over model, 512 B" \
  sh -c "grep -Eq '^  all_reduce +model +2 +1  512 B' '$tmp/ts-m.cost' &&
         test \$(grep -Ec '^  (all_|reduce_|shard)' '$tmp/ts-m.cost') -eq 1"
check "...and both agree with the interpreter on simulated devices" sh -c \
  "'$PARTIR' lower '$tmp/ts-b.pir' --mesh batch=2 --simulate >/dev/null &&
   '$PARTIR' lower '$tmp/ts-m.pir' --mesh model=2 --simulate >/dev/null"

# ------------------------------------------------------- shardings in
# JAX's exports with NamedSharding inputs (gen_jax.py, on a fake mesh of
# CPU devices), in Shardy's form (sdy.mesh, #sdy.sharding: the file names
# its mesh) and in GSPMD's (mhlo.sharding strings of device ids: the mesh
# given with --mesh).  What each must lower to follows from its shardings
# by hand:
#   mlp_relu.model        w0's columns and w1's rows over model=2: the two
#                         products meet in one sum, one all_reduce of the
#                         16x64 f32 result (4096 B) and nothing else
#   mlp_relu.batch        x's rows over batch=2: each device its own rows,
#                         no collective
#   mlp_relu.batch_model  both: one all_reduce over model of a device's
#                         8x64 rows (2048 B)
#   mlp_train_step.batch  the training step data parallel: the two
#                         gradients and the loss all-reduced over batch
#                         (3, 6148 B: as batch.lua makes it, above)
#   transformer_layer.model  Megatron's split of the layer: attention's
#                         and the MLP's sums, two all_reduces (as
#                         megatron.lua makes it, above) and nothing else
sharded_mesh() {
  case $1 in
  *.model) echo model=2 ;;
  *.batch) echo batch=2 ;;
  mlp_relu.batch_model) echo batch=2,model=2 ;;
  layout) echo x=2,y=4 ;;
  esac
}
# run_sharded NAME FORM: runs NAME.FORM.mlir on its model's inputs and
# compares each result with NAME.expected<k>.npy (JAX's sharded jit's)
run_sharded() {
  f=$fx/$1.$2.mlir
  out=$tmp/run-$1.$2
  # shellcheck disable=SC2046 # word splitting wanted: the options
  "$PARTIR" run "$f" $(mesh_opt "$1" "$2") \
    $(inputs "$fx/$1.sdy.mlir" $(model_inputs "${1%.*}")) -o "$out" \
    >"$tmp/stdout" 2>"$tmp/err"
  k=0
  for result in $(sed -n 's/^\([^ []*\) = .*/\1/p' "$tmp/stdout"); do
    near "$out/$result.npy" "$fx/$1.expected$k.npy" 1e-5 \
      "...partitioned, its result $k is what JAX's sharded jit computed"
    k=$((k + 1))
  done
  check "...as many results as JAX's" \
    test "$k" -eq "$(find "$fx" -name "$1.expected*.npy" | wc -l)"
}
# mesh_opt NAME FORM: the --mesh a GSPMD export needs (Shardy's names its
# own)
mesh_opt() {
  if [ "$2" = gspmd ]; then printf -- '--mesh %s' "$(sharded_mesh "$1")"; fi
}
# only_collective STATS LINE: LINE (a regular expression) is the one
# collective of the 'lower --stats' output STATS
only_collective() {
  grep -Eq "^  $2\$" "$1" && test "$(grep -Ec '^  [a-z_]+ over ' "$1")" -eq 1
}
for form in sdy gspmd; do
  for name in mlp_relu.model mlp_relu.batch mlp_relu.batch_model \
    mlp_train_step.batch transformer_layer.model; do
    f=$fx/$name.$form.mlir
    # shellcheck disable=SC2046 # word splitting wanted: --mesh M or nothing
    $VALGRIND "$PARTIR" lower "$f" $(mesh_opt "$name" "$form") --stats \
      --simulate >"$tmp/$name.$form.stats" 2>&1
    st=$?
    check "$name.$form.mlir lowers and simulates as the interpreter runs it" \
      sh -c "test $st -eq 0 && grep -q 'results agree with the interpreter' '$tmp/$name.$form.stats'"
    case $name in
    mlp_relu.model)
      check "...Megatron's split: exactly one all_reduce over model, 4096 B" \
        only_collective "$tmp/$name.$form.stats" 'all_reduce over model +1 +4096 bytes'
      ;;
    mlp_relu.batch)
      check "...data parallel: no collectives" \
        grep -q '^  none$' "$tmp/$name.$form.stats"
      ;;
    mlp_relu.batch_model)
      check "...both: exactly one all_reduce over model, 2048 B" \
        only_collective "$tmp/$name.$form.stats" 'all_reduce over model +1 +2048 bytes'
      ;;
    mlp_train_step.batch)
      # shellcheck disable=SC2046
      "$PARTIR" cost "$f" $(mesh_opt "$name" "$form") >"$tmp/$name.cost" 2>&1
      check "...data parallel: 3 all_reduces over batch, 6148 B, nothing else" \
        sh -c "grep -Eq '^  all_reduce +batch +2 +3  6148 B' '$tmp/$name.cost' &&
               test \$(grep -Ec '^  (all_|reduce_|shard)' '$tmp/$name.cost') -eq 1"
      ;;
    transformer_layer.model)
      check "...Megatron's split: exactly two all_reduces over model" \
        only_collective "$tmp/$name.$form.stats" 'all_reduce over model +2 +[0-9]+ bytes'
      ;;
    esac
    run_sharded "$name" "$form"
  done
done
# a 16x8 value on x=2,y=4 split every way the two forms write
# differently: the argument's rows over y and columns over x (GSPMD: a
# transposed grid), a constraint over x and y on one dimension (a tile
# of the x chunk over y), the result's columns over y (x replicating it)
"$PARTIR" lower "$fx/layout.sdy.mlir" >"$tmp/layout.sdy" 2>&1
"$PARTIR" lower "$fx/layout.gspmd.mlir" --mesh x=2,y=4 >"$tmp/layout.gspmd" 2>&1
check "layout: the Shardy and the GSPMD export lower to the same program" \
  sh -c "test -s '$tmp/layout.sdy' && cmp -s '$tmp/layout.sdy' '$tmp/layout.gspmd'"
check "...its argument split [[y], [x]], its result [[], [y]] on mesh {x = 2, y = 4}" \
  grep -qF 'spmd @main(%arg0: tensor<4x4xf32> {dist = [["y"], ["x"]]}) -> (tensor<16x2xf32> {dist = [[], ["y"]], replicated = ["x"]}) mesh {x = 2, y = 4}' "$tmp/layout.sdy"
check "...the constraint's dimension split over x, then y: a tile in a tile" \
  sh -c "'$PARTIR' import '$fx/layout.sdy.mlir' | grep -A2 '!partir.range<16,8> @\"x\"' | grep -q '!partir.range<8,2> @\"y\"'"
for form in sdy gspmd; do
  # shellcheck disable=SC2046 # word splitting wanted: --mesh M or nothing
  check "layout.$form.mlir simulates as the interpreter runs it" quiet \
    "$PARTIR" lower "$fx/layout.$form.mlir" $(mesh_opt layout "$form") --simulate
  # shellcheck disable=SC2046
  "$PARTIR" run "$fx/layout.$form.mlir" $(mesh_opt layout "$form") \
    -i arg0="$fx/layout.a.npy" -o "$tmp/run-layout.$form" >/dev/null 2>&1
  near "$tmp/run-layout.$form/result0.npy" "$fx/layout.expected0.npy" 1e-6 \
    "...and computes what JAX's sharded jit computed"
done

# hand-written: Shardy's other forms (device_ids in order, a mesh no
# sharding names, '?', priorities, replicated={...}) and GSPMD's (device
# lists, an iota transposed, last_tile_dim_replicate); both say x's rows
# over x and w's columns over y, so every device computes its own block
hand=$tmp/hand
"$PARTIR" lower "$fx/sdy_forms.mlir" --stats --simulate >"$hand.sdy" 2>&1
"$PARTIR" lower "$fx/gspmd_forms.mlir" --mesh x=2,y=2 --stats --simulate >"$hand.gspmd" 2>&1
check "sdy_forms.mlir: no collectives, x [[x], []] and w [[], [y]], the result [[x], [y]]" \
  sh -c "grep -q '^  none$' '$hand.sdy' &&
         grep -qF '%x: tensor<4x4xf32> {dist = [[\"x\"], []], replicated = [\"y\"]}, %w: tensor<4x3xf32> {dist = [[], [\"y\"]], replicated = [\"x\"]}' '$hand.sdy' &&
         grep -qF '(tensor<4x3xf32> {dist = [[\"x\"], [\"y\"]]})' '$hand.sdy' &&
         grep -q 'results agree with the interpreter' '$hand.sdy'"
check "gspmd_forms.mlir lowers to the same program" \
  sh -c "test -s '$hand.gspmd' && cmp -s '$hand.sdy' '$hand.gspmd'"
check "partitioned by its shardings or not, sdy_forms.mlir computes the same" \
  sh -c "'$PARTIR' run '$fx/sdy_forms.mlir' --seed 3 >'$hand.a' &&
         '$PARTIR' run '$fx/sdy_forms.mlir' --seed 3 --shardings ignore >'$hand.i' &&
         test -s '$hand.a' && cmp -s '$hand.a' '$hand.i'"

# the file's mesh is the program's: a --mesh must be the same, and the
# error names both
sdy=$fx/mlp_relu.model.sdy.mlir
check "a --mesh equal to the file's is accepted" \
  quiet "$PARTIR" lower "$sdy" --mesh model=2
"$PARTIR" lower "$sdy" --mesh model=4 >/dev/null 2>"$tmp/err"
st=$?
check "another --mesh is refused, naming both meshes, at the file's sdy.mesh" \
  sh -c "test $st -eq 1 && grep -qF \"mlp_relu.model.sdy.mlir:2:3: error: the mesh given (model=4) is not the file's mesh @mesh (model=2)\" '$tmp/err'"
check "with --shardings ignore the file is the program as written (any mesh)" \
  sh -c "'$PARTIR' import '$sdy' --shardings ignore --mesh model=4 >'$tmp/ign' &&
         '$PARTIR' import '$relu' >'$tmp/plain' && cmp -s '$tmp/ign' '$tmp/plain'"
"$PARTIR" import "$sdy" --shardings sometimes >/dev/null 2>"$tmp/err"
st=$?
check "--shardings takes apply or ignore (a usage error: status 2)" \
  sh -c "test $st -eq 2 && grep -q \"'apply' or 'ignore', not 'sometimes'\" '$tmp/err'"
check "partir import prints the program its shardings make: one sum over model" \
  sh -c "'$PARTIR' import '$sdy' | grep -c 'partir.sum (%r : !partir.range<64,32> @\"model\")' | grep -qx 1"

# the actions are the user's: the REPL's history lists them and undo goes
# back through them to the program as written; the protocol's trace
# lists them and replays them; Lua's load returns them
printf 'history\nundo 3\nshow\nset mesh\n' | "$PARTIR_REPL" "$sdy" >"$tmp/repl" 2>&1
printf '%s\n' "load $sdy --shardings ignore" 'arg-tile arg1 1 32 model' \
  'arg-tile arg2 0 32 model' 'propagate' >"$tmp/history"
check "REPL: history lists 'load ... --shardings ignore' and the three actions" \
  sh -c "grep -A3 '^load ' '$tmp/repl' | cmp -s - '$tmp/history'"
check "...undo 3 reaches the program as written; the session's mesh is the file's" \
  sh -c "'$PARTIR' import '$sdy' --shardings ignore >'$tmp/written' &&
         sed -n '/^func @main/,/^}/p' '$tmp/repl' | cmp -s - '$tmp/written' &&
         grep -qx 'mesh = model=2' '$tmp/repl'"
check "...replaying the history as a script gives the program partir import gives" \
  sh -c "printf 'source %s\nshow\n' '$tmp/history' | '$PARTIR_REPL' 2>/dev/null |
           sed -n '/^func @main/,/^}/p' >'$tmp/replayed' &&
         '$PARTIR' import '$sdy' | cmp -s - '$tmp/replayed'"
{
  printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"reset","params":{"path":"'"$sdy"'"}}'
  printf '%s\n' '{"jsonrpc":"2.0","id":2,"method":"trace","params":{"state":1}}'
  printf '%s\n' '{"jsonrpc":"2.0","id":3,"method":"replay","params":{"path":"'"$sdy"'","trace":["arg-tile arg1 1 32 model","arg-tile arg2 0 32 model","propagate"]}}'
  printf '%s\n' '{"jsonrpc":"2.0","id":4,"method":"reset","params":{"path":"'"$sdy"'","shardings":"ignore"}}'
} | "$PARTIR_REPL" --json --allow "$fx" >"$tmp/proto" 2>&1
check "protocol: reset's trace is the three actions" \
  grep -qF '{"jsonrpc":"2.0","id":2,"result":{"actions":["arg-tile arg1 1 32 model","arg-tile arg2 0 32 model","propagate"]}}' "$tmp/proto"
# hash_of ID: the state hash in the reply to request ID
hash_of() {
  sed -n "s/^{\"jsonrpc\":\"2.0\",\"id\":$1,.*\"hash\":\"\\([0-9a-f]*\\)\".*/\\1/p" "$tmp/proto"
}
check "...replaying them from the program as written gives reset's state" \
  sh -c "test -n '$(hash_of 1)' && test '$(hash_of 1)' = '$(hash_of 3)' &&
         test -n '$(hash_of 4)' && test '$(hash_of 1)' != '$(hash_of 4)'"
printf 'lua local s, i = partir.load("%s"); print(i.mesh, #i.actions, i.actions[3], i.written ~= s)\n' "$sdy" |
  "$PARTIR_REPL" "$relu" >"$tmp/lua" 2>&1
check "Lua: partir.load gives the mesh, the actions and the state as written" \
  grep -qx 'model=2	3	propagate	true' "$tmp/lua"

# -------------------------------------------------------------- checks
# checks.mlir asserts its own values (worked out by hand in the file):
# run and exec (compiled, a thread a device on the file's mesh x=2)
# report each check and pass; a failing check (checks_fail.mlir) exits 1
# with its position and its first difference
(cd "$fx" && "$PARTIR" run checks.mlir) >"$tmp/out" 2>"$tmp/err"
st=$?
check "checks.mlir: run passes its 10 checks" \
  sh -c "test $st -eq 0 && test \$(grep -c ': ok\$' '$tmp/err') -eq 10 &&
         grep -q '^ok = tensor<i1>' '$tmp/out'"
check "...a line for each: checks.mlir:34:11: @check.eq: ok" \
  grep -qxF 'checks.mlir:34:11: @check.eq: ok' "$tmp/err"
"$PARTIR" exec "$fx/checks.mlir" >/dev/null 2>"$tmp/err"
st=$?
check "...compiled and run on the file's mesh, it passes them too" \
  sh -c "test $st -eq 0 && test \$(grep -c ': ok\$' '$tmp/err') -eq 10"
# bitwise.mlir: and, or, xor, not, the shifts, popcnt and count_leading_zeros on ui32, i32
# and i1, and reduces over integer and/or, checked against values worked
# out by hand in the file: interpreted and compiled
"$PARTIR" run "$fx/bitwise.mlir" >/dev/null 2>"$tmp/err"
st=$?
check "bitwise.mlir: run passes its 22 checks" \
  sh -c "test $st -eq 0 && test \$(grep -c ': ok\$' '$tmp/err') -eq 22"
"$PARTIR" exec "$fx/bitwise.mlir" >/dev/null 2>"$tmp/err"
st=$?
check "...compiled, it passes them too" \
  sh -c "test $st -eq 0 && test \$(grep -c ': ok\$' '$tmp/err') -eq 22"
(cd "$fx" && "$PARTIR" run checks_fail.mlir) >/dev/null 2>"$tmp/err"
st=$?
check "a failing check: status 1, its position and first difference" \
  sh -c "test $st -eq 1 && grep -qxF 'checks_fail.mlir:8:3: error: check.expect_almost_eq_const failed: 1 of 4 elements differs; at [2] it is 2, expected 2.5 (tolerance 0.0001)' '$tmp/err' &&
         grep -qxF 'checks_fail.mlir:9:3: check.expect_eq_const: ok' '$tmp/err'"

# ---------------------------------------------------- what is refused
"$PARTIR" check "$fx/unsupported.mlir" >/dev/null 2>"$tmp/unsup"
st=$?
check "unsupported operations: exit status 1" test $st -eq 1
(cd "$top_srcdir" && "$PARTIR" check tests/fixtures/stablehlo/unsupported.mlir) \
  >/dev/null 2>"$tmp/unsup"
check "one error lists every unsupported operation with file:line:col" \
  sh -c "diff -u '$fx/unsupported.expected' '$tmp/unsup' >'$tmp/diff'"
[ -s "$tmp/diff" ] && show "$tmp/diff"

# an uneven split, as JAX pads it (3 rows over 2 devices: parts of 2,
# the last padded): partir's export of the batch tactic's, and JAX's
# own constraint, import as the uneven range<3,2> and run as written
cat >"$tmp/uneven.pir" <<'PIR'
func @f(%x: tensor<3x8xf32>, %w: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %h = matmul(%x, %w)
  %y = tanh(%h)
  return %y
}
PIR
"$PARTIR" export "$tmp/uneven.pir" --mesh batch=2 \
  --tactic "$top_srcdir/tactics/batch.lua" -o "$tmp/uneven.mlir"
check "an uneven export imports back as the padded range<3,2> over batch" \
  sh -c "'$PARTIR' import '$tmp/uneven.mlir' | grep -q 'range<3,2> @\"batch\"'"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/uneven.mlir" --simulate
cat >"$tmp/uneven_wsc.mlir" <<'MLIR'
sdy.mesh @mesh = <["batch"=2]>
func.func @main(%x: tensor<3x8xf32>, %w: tensor<8x4xf32>) -> tensor<3x4xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<3x8xf32>, tensor<8x4xf32>) -> tensor<3x4xf32>
  %1 = sdy.sharding_constraint %0 <@mesh, [{"batch"}, {}]> : tensor<3x4xf32>
  %2 = stablehlo.tanh %1 : tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}
MLIR
check "JAX's uneven sharding constraint: its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/uneven_wsc.mlir" --simulate

# torch-xla's GRUCell run twice (gen_torch.py): two fused gate weights
# whose chunks the cell combines.  Megatron with each chunk a weight of
# its own does not resolve on its training step; the plan with each
# weight whole does, and the tactic falls back to it
gru=$fx/torch_gru_cell.mlir
"$PARTIR" grad "$gru" --loss sum --wrt arg0,arg1,arg3,arg4 -o "$tmp/gru-step.pir" \
  2>"$tmp/err"
check "torch-xla's GRUCell: Megatron on its training step runs" \
  quiet "$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" "$tmp/gru-step.pir" \
  --mesh model=2 --set inputs=arg2 -o "$tmp/gru-step-m.pir"
check "...and its devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/gru-step-m.pir" --mesh model=2 --simulate

# tactics over a file whose shardings split it already (applied when it
# loads): batch leaves x, split over batch by a constraint, as it is
# (split again, batch was bound twice), and Megatron, finding the
# weights split over model (by their shardings), gives the program back
cat >"$tmp/constrained.mlir" <<'MLIR'
sdy.mesh @mesh = <["batch"=2, "model"=2]>
func.func @main(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %c = sdy.sharding_constraint %x <@mesh, [{"batch"}, {}]> : tensor<4x8xf32>
  %0 = stablehlo.dot_general %c, %w1, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h = sdy.sharding_constraint %0 <@mesh, [{"batch"}, {"model"}]> : tensor<4x16xf32>
  %1 = stablehlo.tanh %h : tensor<4x16xf32>
  %2 = stablehlo.dot_general %1, %w2, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
MLIR
"$PARTIR" import "$tmp/constrained.mlir" -o "$tmp/constrained.pir"
check "tactic batch.lua over the file's own split: the program as it loaded" \
  sh -c "'$PARTIR' tactic '$top_srcdir/tactics/batch.lua' '$tmp/constrained.mlir' \
           --mesh batch=2,model=2 -o '$tmp/constrained-batch.pir' &&
         cmp -s '$tmp/constrained.pir' '$tmp/constrained-batch.pir'"
cat >"$tmp/sharded.mlir" <<'MLIR'
sdy.mesh @mesh = <["batch"=2, "model"=2]>
func.func @main(%x: tensor<4x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"batch"}, {}]>}, %w1: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"model"}]>}, %w2: tensor<16x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"model"}, {}]>}) -> tensor<4x8xf32> {
  %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = stablehlo.tanh %0 : tensor<4x16xf32>
  %2 = stablehlo.dot_general %1, %w2, contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}
MLIR
"$PARTIR" import "$tmp/sharded.mlir" -o "$tmp/sharded.pir"
for t in megatron; do
  check "tactic $t.lua over the file's own split: the program as it loaded" \
    sh -c "'$PARTIR' tactic '$top_srcdir/tactics/$t.lua' '$tmp/sharded.mlir' \
             --mesh batch=2,model=2 -o '$tmp/sharded-$t.pir' &&
           cmp -s '$tmp/sharded.pir' '$tmp/sharded-$t.pir'"
done

# shardings that cannot be applied: the error says how to load the file
# anyway (nothing that loads takes 'propagate --resolve')
(cd "$fx" && "$PARTIR" check bad/sharding_conflict.mlir) >/dev/null 2>"$tmp/err"
check "conflicting shardings: refused, naming --shardings ignore" \
  sh -c "test $? -eq 1 && grep -q 'load it with --shardings ignore' '$tmp/err'"

# bad input: the first line of each file says what the error must say
for f in "$fx"/bad/*.mlir; do
  want=$(sed -n '1s/^\/\/ expect: //p' "$f")
  (cd "$fx" && $VALGRIND "$PARTIR" check "bad/$(basename "$f")") \
    >/dev/null 2>"$tmp/err"
  st=$?
  if [ $st -eq 1 ] && grep -qF -- "$want" "$tmp/err"; then
    ok "bad/$(basename "$f"): $want"
  else
    not_ok "bad/$(basename "$f"): status $st, wanted: $want"
    show "$tmp/err"
  fi
done
done_testing
