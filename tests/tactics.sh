#!/bin/sh
# The shipped tactics through 'partir tactic': Megatron, batch and ZeRO,
# alone and composed, on the examples and on generated models.  Each
# result's regions are counted in the printed program (as Alpa counts
# collectives) and checked for nesting, and each result runs next to the
# original: on seeded inputs, and on the NumPy fixtures against NumPy's
# answer.  Then the CLI's tactic errors: a message, a status, no output.
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples
fx=$top/tests/fixtures/examples
tactics=$top/tactics
compose=$top/tests/lua/compose.lua

# tactic NAME SCRIPT FILE MESH [OPTIONS...]: runs a tactic into $tmp/NAME.pir.
tactic() {
  name=$1 script=$2 file=$3 mesh=$4
  shift 4
  if $VALGRIND "$PARTIR" tactic "$script" "$file" --mesh "$mesh" "$@" \
    -o "$tmp/$name.pir" 2>"$tmp/$name.err"; then
    ok "$name: $(basename "$script" .lua) runs with --mesh $mesh"
  else
    not_ok "$name: $(basename "$script" .lua) runs with --mesh $mesh"
    show "$tmp/$name.err"
  fi
}

# regions FILE: one line per tile or sum, in print order, naming the
# regions it sits in: "tile@batch", "tile@batch/sum@model" ("-": no axis).
regions() {
  awk '/= partir\.(tile|sum) / {
         match($0, /partir\.(tile|sum)/)
         kind = substr($0, RSTART + 7, RLENGTH - 7)
         axis = "-"
         if (match($0, /@"[^"]*"/)) axis = substr($0, RSTART + 2, RLENGTH - 3)
         path = (depth > 0 ? stack[depth] "/" : "") kind "@" axis
         print path
         stack[++depth] = path
         next
       }
       /^ +}$/ { if (depth > 0) depth-- }' "$1"
}

# expect_regions NAME WANT...: the regions of $tmp/NAME.pir are WANT.
expect_regions() {
  name=$1
  shift
  want=$(printf '%s\n' "$@")
  got=$(regions "$tmp/$name.pir" 2>/dev/null)
  if [ "$got" = "$want" ]; then
    ok "$name: regions $(echo $want)"
  else
    not_ok "$name: regions $(echo $want)"
    echo "# got: $(echo $got)"
  fi
}

# count FILE PATTERN: lines of FILE matching the extended regexp.
count() { grep -Ec "$2" "$1"; }

# relay DESC: FIXTURE_RUNNER's TAP lines (in $tmp/close.tap), renumbered.
relay() {
  while read -r status rest; do
    rest=$(echo "$rest" | sed "s|$tmp/||g")
    case $status in
    ok) ok "$1: ${rest#* - }" ;;
    not) not_ok "$1: ${rest#* * - }" ;;
    '#') echo "# $rest" ;;
    esac
  done <"$tmp/close.tap"
}

# same_outputs NAME ORIGINAL [RTOL ATOL]: $tmp/NAME.pir computes what
# ORIGINAL does on seeded random inputs (within rtol 1e-4, atol 1e-5).
same_outputs() {
  name=$1 orig=$2 rtol=${3:-1e-4} atol=${4:-1e-5}
  rm -rf "$tmp/$name.want" "$tmp/$name.got"
  if ! "$PARTIR" run "$orig" --seed 3 -o "$tmp/$name.want" >/dev/null 2>"$tmp/$name.err" ||
    ! "$PARTIR" run "$tmp/$name.pir" --seed 3 -o "$tmp/$name.got" >/dev/null 2>>"$tmp/$name.err"; then
    not_ok "$name: runs on seeded inputs"
    show "$tmp/$name.err"
    return
  fi
  set -- $(ls "$tmp/$name.want")
  set -- "$@" $(ls "$tmp/$name.got")
  if [ $# -ne 2 ]; then
    not_ok "$name: one result each (got $*)"
    return
  fi
  "$FIXTURE_RUNNER" --npy-close "$tmp/$name.got/$2" "$tmp/$name.want/$1" "$rtol" "$atol" \
    >"$tmp/close.tap"
  relay "$name: seed 3, same outputs"
}

# numpy_outputs NAME PROGRAM: $tmp/NAME.pir run on the NumPy fixture
# inputs gives NumPy's answer (tests/fixtures/gen_examples.py).
numpy_outputs() {
  name=$1 prog=$2
  args=
  case $prog in
  mlp) names="x w u" ;;
  transformer) names="x ln1_g ln1_b wq wk wv wo ln2_g ln2_b w1 b1 w2 b2" ;;
  esac
  for a in $names; do
    args="$args -i $a=$fx/$prog.$a.npy"
  done
  rm -rf "$tmp/$name.np"
  if ! "$PARTIR" run "$tmp/$name.pir" $args -o "$tmp/$name.np" >/dev/null 2>"$tmp/$name.err"; then
    not_ok "$name: runs on the NumPy inputs"
    show "$tmp/$name.err"
    return
  fi
  "$FIXTURE_RUNNER" --npy-close "$tmp/$name.np/$(ls "$tmp/$name.np")" "$fx/$prog.expected.npy" \
    1e-4 1e-5 >"$tmp/close.tap"
  relay "$name: NumPy inputs, NumPy's answer"
}

# ---- Megatron on the MLP: w by columns, u by rows, one all-reduce
tactic megatron-mlp "$tactics/megatron.lua" "$ex/mlp.pir" model=2
expect_regions megatron-mlp "sum@model"
check "megatron-mlp: exactly one partir.sum, over model" \
  test "$(count "$tmp/megatron-mlp.pir" 'partir\.sum ')" -eq 1 \
  -a "$(count "$tmp/megatron-mlp.pir" 'partir\.sum \(%r : !partir\.range<256,128> @"model"\)')" -eq 1
check "megatron-mlp: no partir.tile" test "$(count "$tmp/megatron-mlp.pir" 'partir\.tile')" -eq 0
cat >"$tmp/megatron-want.pir" <<'PIR'
func @mlp(%x: tensor<16x256xf32>, %w: tensor<256x256xf32>,
          %u: tensor<256x256xf32>) -> tensor<16x256xf32> {
  // w by columns, u by rows: each device holds half of each
  %0 = partir.sum (%r : !partir.range<256,128> @"model") {
    %1 = partir.slice 1 %w[%r]
    %2 = matmul(%x, %1)
    %3 = partir.slice 0 %u[%r]
    %4 = matmul(%2, %3)
    partir.yield %4
  }
  return %0
}
PIR
"$PARTIR" fmt "$tmp/megatron-want.pir" >"$tmp/megatron-want.txt"
check "megatron-mlp: is Megatron's MLP, as written by hand" \
  cmp -s "$tmp/megatron-mlp.pir" "$tmp/megatron-want.txt"
same_outputs megatron-mlp "$ex/mlp.pir"
numpy_outputs megatron-mlp mlp
tactic megatron-tp "$tactics/megatron.lua" "$ex/mlp.pir" tp=4 --set axis=tp
expect_regions megatron-tp "sum@tp"
check "megatron-tp: --set axis=tp splits over tp, 4 ways" \
  grep -q 'partir\.range<256,64> @"tp"' "$tmp/megatron-tp.pir"
# mixed precision: f32 parameters converted to bf16 before their products
# (w.astype(bf16) in JAX) are still the weights: w1 by columns, w2 by
# rows, one sum over model, what the unpartitioned program computes
cat >"$tmp/mixed.pir" <<'PIR'
func @mixed(%x: tensor<8x32xf32>, %w1: tensor<32x64xf32>, %w2: tensor<64x16xf32>) -> tensor<8x16xbf16> {
  %xb = convert(%x) : tensor<8x32xbf16>
  %w1b = convert(%w1) : tensor<32x64xbf16>
  %h = matmul(%xb, %w1b)
  %a = relu(%h)
  %w2b = convert(%w2) : tensor<64x16xbf16>
  %y = matmul(%a, %w2b)
  return %y
}
PIR
tactic megatron-mixed "$tactics/megatron.lua" "$tmp/mixed.pir" model=2
expect_regions megatron-mixed "sum@model"
check "megatron-mixed: w1 split by columns and w2 by rows, inside the sum" \
  sh -c "grep -q 'partir.slice 1 %w1\[%r\]' '$tmp/megatron-mixed.pir' &&
         grep -q 'partir.slice 0 %w2\[%r\]' '$tmp/megatron-mixed.pir'"
check "megatron-mixed: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-mixed.pir" --mesh model=2 --simulate
# a language model whose output layer is its embedding table, transposed
# (GPT-2's tied embedding, as JAX writes h @ wte.T): the table is split
# by rows for the lookup (one all-reduce), the MLP block by columns and
# rows (one more), and the logits come out split by vocabulary, which the
# loss's max cannot carry: gathered there (one all_gather) as a last
# column-parallel layer's are, not refused.  A 2-row token-type table on
# 4 devices has fewer rows than parts: it stays whole.
cat >"$tmp/tied.pir" <<'PIR'
func @tied(%ids: tensor<4xi32>, %tt: tensor<4xi32>, %wte: tensor<16x8xf32>, %wtt: tensor<2x8xf32>,
           %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4xf32> {
  %i = broadcast_in_dim(%ids) {dims = [0]} : tensor<4x1xi32>
  %e = gather(%wte, %i) {collapsed_slice_dims = [0], index_vector_dim = 1, offset_dims = [1], slice_sizes = [1, 8], start_index_map = [0]}
  %j = broadcast_in_dim(%tt) {dims = [0]} : tensor<4x1xi32>
  %t = gather(%wtt, %j) {collapsed_slice_dims = [0], index_vector_dim = 1, offset_dims = [1], slice_sizes = [1, 8], start_index_map = [0]}
  %x = add(%e, %t)
  %h = dot_general(%x, %w1) {lhs_contract = [1], rhs_contract = [0]}
  %a = tanh(%h)
  %o = dot_general(%a, %w2) {lhs_contract = [1], rhs_contract = [0]}
  %r = add(%x, %o)
  %wt = transpose(%wte) {permutation = [1, 0]}
  %logits = dot_general(%r, %wt) {lhs_contract = [1], rhs_contract = [0]}
  %m = reduce_max(%logits) {dims = [1]}
  return %m
}
PIR
tactic megatron-tied "$tactics/megatron.lua" "$tmp/tied.pir" model=4 --set inputs=ids,tt
check "megatron-tied: the table by rows, w1 by columns, w2 by rows, the token types whole" \
  sh -c "grep -q 'partir.slice 0 %wte\[%r' '$tmp/megatron-tied.pir' &&
         grep -q 'partir.slice 1 %w1\[%r' '$tmp/megatron-tied.pir' &&
         grep -q 'partir.slice 0 %w2\[%r' '$tmp/megatron-tied.pir' &&
         ! grep -q 'partir.slice [0-9] %wtt' '$tmp/megatron-tied.pir'"
"$PARTIR" cost "$tmp/megatron-tied.pir" --mesh model=4 --hw h100x8 |
  awk '$1 ~ /^all_/ { print $1, $2, $4 }' >"$tmp/tied.coll"
check "megatron-tied: 2 all_reduces and the logits' all_gather over model" \
  test "$(tr '\n' ',' <"$tmp/tied.coll")" = "all_reduce model 2,all_gather model 1,"
check "megatron-tied: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-tied.pir" --mesh model=4 --simulate
# GPT-2's position table, looked up at arange(seq) (an iota: no input
# gives its indices), stays whole as Megatron-LM keeps it: the token
# table by rows (one all_reduce), the MLP block (one more), the
# positions looked up locally: 2 all_reduces, not 3
cat >"$tmp/pos.pir" <<'PIR'
func @pos(%ids: tensor<4xi32>, %wte: tensor<16x8xf32>, %wpe: tensor<4x8xf32>,
          %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %i = broadcast_in_dim(%ids) {dims = [0]} : tensor<4x1xi32>
  %e = gather(%wte, %i) {collapsed_slice_dims = [0], index_vector_dim = 1, offset_dims = [1], slice_sizes = [1, 8], start_index_map = [0]}
  %p = iota() {dim = 0} : tensor<4x1xi32>
  %q = gather(%wpe, %p) {collapsed_slice_dims = [0], index_vector_dim = 1, offset_dims = [1], slice_sizes = [1, 8], start_index_map = [0]}
  %x = add(%e, %q)
  %h = dot_general(%x, %w1) {lhs_contract = [1], rhs_contract = [0]}
  %a = tanh(%h)
  %o = dot_general(%a, %w2) {lhs_contract = [1], rhs_contract = [0]}
  %r = add(%x, %o)
  return %r
}
PIR
tactic megatron-pos "$tactics/megatron.lua" "$tmp/pos.pir" model=2
check "megatron-pos: the token table by rows, the position table whole" \
  sh -c "grep -q 'partir.slice 0 %wte\[%r' '$tmp/megatron-pos.pir' &&
         ! grep -q 'partir.slice [0-9] %wpe' '$tmp/megatron-pos.pir'"
"$PARTIR" cost "$tmp/megatron-pos.pir" --mesh model=2 --hw h100x8 |
  awk '$1 ~ /^all_/ { print $1, $2, $4 }' >"$tmp/pos.coll"
check "megatron-pos: 2 all_reduces over model" \
  test "$(tr '\n' ',' <"$tmp/pos.coll")" = "all_reduce model 2,"
check "megatron-pos: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-pos.pir" --mesh model=2 --simulate

# q, k and v split off one fused projection (x @ w_qkv, then slices, as
# jnp.split and PyTorch's chunk write them; 2 heads of 4): a split of
# w_qkv's columns would give one device all of q and half of k, so each
# slice is taken into the contraction (sink-slice) and the weight's
# slices are split by columns, w_qkv itself whole.  Per device on
# model=2, by hand: q, k, v 3 x 2*(2*4)*8*4 = 1536, scores and their
# product with v 2 x 2*2*4*4*4 = 512 (one head each), the row-parallel
# output 2*(2*4)*4*8 = 512: 2560 FLOPs, half of 5120, and one
# all_reduce of the 2x4x8 f32 output (256 B); over batch=2,model=2,
# 1280 and 128 B, in both orders, and nothing over batch.
cat >"$tmp/fused.pir" <<'PIR'
func @fused(%x: tensor<2x4x8xf32>, %wqkv: tensor<8x24xf32>, %wo: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %qkv = dot_general(%x, %wqkv) {lhs_contract = [2], rhs_contract = [0]}
  %q = slice(%qkv) {start = [0, 0, 0], limit = [2, 4, 8]}
  %k = slice(%qkv) {start = [0, 0, 8], limit = [2, 4, 16]}
  %v = slice(%qkv) {start = [0, 0, 16], limit = [2, 4, 24]}
  %qh = reshape(%q) : tensor<2x4x2x4xf32>
  %kh = reshape(%k) : tensor<2x4x2x4xf32>
  %vh = reshape(%v) : tensor<2x4x2x4xf32>
  %s = dot_general(%qh, %kh) {lhs_batch = [0, 2], rhs_batch = [0, 2], lhs_contract = [3], rhs_contract = [3]}
  %o = dot_general(%s, %vh) {lhs_batch = [0, 1], rhs_batch = [0, 2], lhs_contract = [3], rhs_contract = [1]}
  %ot = transpose(%o) {permutation = [0, 2, 1, 3]}
  %om = reshape(%ot) : tensor<2x4x8xf32>
  %y = dot_general(%om, %wo) {lhs_contract = [2], rhs_contract = [0]}
  return %y
}
PIR
# fused_costs NAME MESH: "FLOPS op axis count bytes, ..." of $tmp/NAME.pir
fused_costs() {
  "$PARTIR" cost "$tmp/$1.pir" --mesh "$2" --hw h100x8 |
    awk '$1 == "FLOPs" { printf "%s", $2 }
         $1 ~ /^all_/ { printf ", %s %s %s %s", $1, $2, $4, $5 }'
}
# expect_block NAME WHOLE BYTES: $tmp/NAME.pir (model=2) keeps %WHOLE
# whole and splits the block %w1 by columns and %w2 by rows, its one
# all_reduce of BYTES, and simulates as the interpreter runs it.
expect_block() {
  check "$1: %$2 whole, w1 by columns, w2 by rows" \
    sh -c "! grep -q 'partir.slice [0-9] %$2' '$tmp/$1.pir' &&
           grep -q 'partir.slice 1 %w1' '$tmp/$1.pir' &&
           grep -q 'partir.slice 0 %w2' '$tmp/$1.pir'"
  check "$1: one all_reduce of $3 B" \
    test "$(fused_costs "$1" model=2 | cut -d, -f2-)" = " all_reduce model 1 $3"
  check "$1: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$tmp/$1.pir" --mesh model=2 --simulate
}
tactic megatron-fused "$tactics/megatron.lua" "$tmp/fused.pir" model=2
check "megatron-fused: w_qkv whole, its three slices split by columns" \
  sh -c "test \$(grep -c '= slice(%wqkv)' '$tmp/megatron-fused.pir') -eq 3 &&
         test \$(grep -Ec 'partir.slice 1 %[0-9]+\[%r' '$tmp/megatron-fused.pir') -eq 3 &&
         ! grep -q 'partir.slice [0-9] %wqkv' '$tmp/megatron-fused.pir'"
check "megatron-fused: 2560 FLOPs a device, one all_reduce of 256 B" \
  test "$(fused_costs megatron-fused model=2)" = "2560, all_reduce model 1 256"
check "megatron-fused: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-fused.pir" --mesh model=2 --simulate
for order in batch,megatron megatron,batch; do
  name=fused-$(echo $order | tr , -)
  tactic "$name" "$compose" "$tmp/fused.pir" batch=2,model=2 --set order=$order
  check "$name: 1280 FLOPs a device, one all_reduce of 128 B over model" \
    test "$(fused_costs "$name" batch=2,model=2)" = "1280, all_reduce model 1 128"
  check "$name: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$tmp/$name.pir" --mesh batch=2,model=2 --simulate
done
# its training step: the weight's slices split as in the forward pass,
# their gradients gathered (one all_gather each) for w_qkv's update;
# batch first, the step's q, k and v read one tile of the contraction
"$PARTIR" grad "$tmp/fused.pir" --loss sum --params-from-arg 1 \
  -o "$tmp/fused-step.pir" 2>"$tmp/err"
tactic megatron-fused-step "$tactics/megatron.lua" "$tmp/fused-step.pir" \
  model=2 --set inputs=x
check "megatron-fused-step: one all_reduce, three all_gathers of the slices' gradients" \
  test "$(fused_costs megatron-fused-step model=2 | cut -d, -f2-)" = \
  " all_reduce model 1 256, all_gather model 3 384"
check "megatron-fused-step: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-fused-step.pir" --mesh model=2 --simulate
tactic fused-step-batch-megatron "$compose" "$tmp/fused-step.pir" \
  batch=2,model=2 --set order=batch,megatron --set inputs=x
check "fused-step-batch-megatron: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/fused-step-batch-megatron.pir" \
  --mesh batch=2,model=2 --simulate

# the same in PyTorch's form (x @ w_qkv.T: the weight [3d, d]
# transposed) after a parameter of its own (a norm's scale): the step's
# backward contracts the whole transposed weight for the scale's
# gradient, and the weight stays whole there (its slices are the
# weights): the forward's one all_reduce (256 B), and q's, k's and v's
# cotangents (split by heads) gathered where they are padded back to the
# fused width (3 x 128 B sent), the fused weight's gradient and the
# scale's input's computed from them.  A split of w_qkv itself in
# halves of 12 (one device q and half of k) took 2 all_reduces and 4
# all_gathers.
{ # fused.pir's attention from q, k and v on
  cat <<'PIR'
func @fused_t(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %wqkv: tensor<24x8xf32>, %wo: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %gb = broadcast_in_dim(%g) {dims = [2]} : tensor<2x4x8xf32>
  %xs = mul(%x, %gb)
  %wt = transpose(%wqkv) {permutation = [1, 0]}
  %qkv = dot_general(%xs, %wt) {lhs_contract = [2], rhs_contract = [0]}
PIR
  sed -n '/^  %q = slice/,$p' "$tmp/fused.pir"
} >"$tmp/fused-t.pir"
"$PARTIR" grad "$tmp/fused-t.pir" --loss sum --params-from-arg 1 \
  -o "$tmp/fused-t-step.pir" 2>"$tmp/err"
tactic megatron-fused-t-step "$tactics/megatron.lua" "$tmp/fused-t-step.pir" \
  model=2 --set inputs=x
check "megatron-fused-t-step: w_qkv whole, its slices split by rows" \
  sh -c "! grep -q 'partir.slice [0-9] %wqkv\\[' '$tmp/megatron-fused-t-step.pir' &&
         test \$(grep -Ec 'partir.slice 0 %[0-9]+\\[%r' '$tmp/megatron-fused-t-step.pir') -ge 3"
check "megatron-fused-t-step: one all_reduce, three all_gathers of the slices' cotangents" \
  test "$(fused_costs megatron-fused-t-step model=2 | cut -d, -f2-)" = \
  " all_reduce model 1 256, all_gather model 3 384"
check "megatron-fused-t-step: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-fused-t-step.pir" --mesh model=2 --simulate

# a model whose layers are one stacked weight each (lax.scan over
# layers, w1[l]: a dynamic_slice of one layer, its dimension squeezed
# away): each layer's view is the weight, split along the stacked
# argument's own dimension.  By hand, per layer 2*4*16*32 + 4*32 +
# 2*4*32*16 = 8320 FLOPs over 2 layers, 16640; on model=2 each device
# 8320, and one all_reduce a layer (of the 4x16 f32 output, 256 B)
cat >"$tmp/stacked.pir" <<'PIR'
func @stacked(%x: tensor<4x16xf32>, %w1: tensor<2x16x32xf32>, %w2: tensor<2x32x16xf32>) -> tensor<4x16xf32> {
  %c0 = constant() {value = 0} : tensor<i32>
  %c1 = constant() {value = 1} : tensor<i32>
  %z = constant() {value = 0.0} : tensor<4x32xf32>
  %a0 = dynamic_slice(%w1, %c0, %c0, %c0) {slice_sizes = [1, 16, 32]}
  %u0 = reshape(%a0) : tensor<16x32xf32>
  %h0 = dot_general(%x, %u0) {lhs_contract = [1], rhs_contract = [0]}
  %r0 = max(%h0, %z)
  %b0 = dynamic_slice(%w2, %c0, %c0, %c0) {slice_sizes = [1, 32, 16]}
  %v0 = reshape(%b0) : tensor<32x16xf32>
  %y0 = dot_general(%r0, %v0) {lhs_contract = [1], rhs_contract = [0]}
  %a1 = dynamic_slice(%w1, %c1, %c0, %c0) {slice_sizes = [1, 16, 32]}
  %u1 = reshape(%a1) : tensor<16x32xf32>
  %h1 = dot_general(%y0, %u1) {lhs_contract = [1], rhs_contract = [0]}
  %r1 = max(%h1, %z)
  %b1 = dynamic_slice(%w2, %c1, %c0, %c0) {slice_sizes = [1, 32, 16]}
  %v1 = reshape(%b1) : tensor<32x16xf32>
  %y1 = dot_general(%r1, %v1) {lhs_contract = [1], rhs_contract = [0]}
  return %y1
}
PIR
tactic megatron-stacked "$tactics/megatron.lua" "$tmp/stacked.pir" model=2
check "megatron-stacked: w1 split along its dimension 2, w2 along 1" \
  sh -c "grep -q 'partir.slice 2 %w1\[%r' '$tmp/megatron-stacked.pir' &&
         grep -q 'partir.slice 1 %w2\[%r' '$tmp/megatron-stacked.pir'"
check "megatron-stacked: 8320 FLOPs a device, an all_reduce of 256 B a layer" \
  test "$(fused_costs megatron-stacked model=2)" = "8320, all_reduce model 2 512"
check "megatron-stacked: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-stacked.pir" --mesh model=2 --simulate

# ZeRO on the training step of a chain of 20 products: one 'remat'
# names every gathered parameter (a command once took 16 words at most)
{
  printf 'func @chain(%%x: tensor<4x8xf32>'
  for i in $(seq 1 20); do printf ', %%w%d: tensor<8x8xf32>' "$i"; done
  printf ') -> tensor<4x8xf32> {\n  %%h0 = tanh(%%x)\n'
  for i in $(seq 1 20); do
    printf '  %%h%d = matmul(%%h%d, %%w%d)\n' "$i" $((i - 1)) "$i"
  done
  printf '  return %%h20\n}\n'
} >"$tmp/chain20.pir"
"$PARTIR" grad "$tmp/chain20.pir" --loss sum -o "$tmp/chain20-step.pir" 2>"$tmp/err"
tactic zero-chain20 "$tactics/zero.lua" "$tmp/chain20-step.pir" data=2
check "zero-chain20: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/zero-chain20.pir" --mesh data=2 --simulate

# a patch embedding (a ViT's first projection) feeds a residual stream
# that a layer norm normalizes over its features: split by columns, the
# norm's reductions meet the split and every block after it is planned
# the other way round.  It is left whole, and the MLP block is one
# column and one row split: one all_reduce of the 2x4x8 f32 block output
cat >"$tmp/vit.pir" <<'PIR'
func @vit(%p: tensor<2x4x12xf32>, %wpatch: tensor<12x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<2x4x8xf32> {
  %h = dot_general(%p, %wpatch) {lhs_contract = [2], rhs_contract = [0]}
  %s = reduce_sum(%h) {dims = [2]}
  %sb = broadcast_in_dim(%s) {dims = [0, 1]} : tensor<2x4x8xf32>
  %n = constant() {value = 0.125} : tensor<2x4x8xf32>
  %mean = mul(%sb, %n)
  %c = sub(%h, %mean)
  %a = dot_general(%c, %w1) {lhs_contract = [2], rhs_contract = [0]}
  %g = tanh(%a)
  %o = dot_general(%g, %w2) {lhs_contract = [2], rhs_contract = [0]}
  %y = add(%h, %o)
  return %y
}
PIR
tactic megatron-vit "$tactics/megatron.lua" "$tmp/vit.pir" model=2
expect_block megatron-vit wpatch 256

# a mixture of experts' router feeding top_k: split by columns, its
# logits meet top_k's pairwise comparisons, which no gather reaches (a
# conflict); it is left whole and the plan made again: the expert MLP
# by columns and rows, one all_reduce of the 8x16 f32 output (512 B)
cat >"$tmp/router.mlir" <<'MLIR'
func.func @main(%x: tensor<8x16xf32>, %wg: tensor<16x4xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x16xf32>) -> (tensor<8x16xf32>, tensor<8x2xi32>) {
  %logits = stablehlo.dot_general %x, %wg, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %v, %i = chlo.top_k(%logits, k = 2) : tensor<8x4xf32> -> (tensor<8x2xf32>, tensor<8x2xi32>)
  %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
  %g = stablehlo.reduce(%v init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<8x2xf32>, tensor<f32>) -> tensor<8xf32>
  %gb = stablehlo.broadcast_in_dim %g, dims = [0] : (tensor<8xf32>) -> tensor<8x16xf32>
  %h = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %a = stablehlo.tanh %h : tensor<8x32xf32>
  %o = stablehlo.dot_general %a, %w2, contracting_dims = [1] x [0] : (tensor<8x32xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  %y = stablehlo.multiply %o, %gb : tensor<8x16xf32>
  return %y, %i : tensor<8x16xf32>, tensor<8x2xi32>
}
MLIR
tactic megatron-router "$tactics/megatron.lua" "$tmp/router.mlir" model=2
expect_block megatron-router wg 512

# PyTorch's nn.MultiheadAttention as torch-xla writes its fast path: one
# projection by in_proj_weight [3E, E] (transposed), its bias, the
# result unflattened to [B, S, 3, H, hd] and permuted to put the 3
# first, q, k and v sliced off it.  The slices go down through the
# permute, the unflatten (part i of the 3 is columns [8i, 8i + 8) of the
# [8, 24] projection: sink-slice-reshape), the bias and the transpose
# onto the weight: each device computes one head of q, k and v and the
# output projection's rows of it, 2816 FLOPs of 5632 (B 2, S 4, E 8,
# H 2, hd 4), and the output is summed once: 8 x 8 f32, 256 B sent.
cat >"$tmp/mha.pir" <<'PIR'
func @mha(%x: tensor<8x8xf32>, %w: tensor<24x8xf32>, %b: tensor<24xf32>, %wo: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %wt = transpose(%w) {permutation = [1, 0]}
  %p = matmul(%x, %wt)
  %bb = broadcast_in_dim(%b) {dims = [1]} : tensor<8x24xf32>
  %qkv = add(%p, %bb)
  %u = reshape(%qkv) : tensor<2x4x3x2x4xf32>
  %t = transpose(%u) {permutation = [2, 0, 3, 1, 4]}
  %q0 = slice(%t) {start = [0, 0, 0, 0, 0], limit = [1, 2, 2, 4, 4]}
  %q = reshape(%q0) : tensor<2x2x4x4xf32>
  %k0 = slice(%t) {start = [1, 0, 0, 0, 0], limit = [2, 2, 2, 4, 4]}
  %k = reshape(%k0) : tensor<2x2x4x4xf32>
  %v0 = slice(%t) {start = [2, 0, 0, 0, 0], limit = [3, 2, 2, 4, 4]}
  %v = reshape(%v0) : tensor<2x2x4x4xf32>
  %s = dot_general(%q, %k) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [3]}
  %m = reduce_max(%s) {dims = [3]}
  %mb = broadcast_in_dim(%m) {dims = [0, 1, 2]} : tensor<2x2x4x4xf32>
  %d = sub(%s, %mb)
  %e = exp(%d)
  %z = reduce_sum(%e) {dims = [3]}
  %zb = broadcast_in_dim(%z) {dims = [0, 1, 2]} : tensor<2x2x4x4xf32>
  %a = div(%e, %zb)
  %o = dot_general(%a, %v) {lhs_batch = [0, 1], lhs_contract = [3], rhs_batch = [0, 1], rhs_contract = [2]}
  %ot = transpose(%o) {permutation = [0, 2, 1, 3]}
  %om = reshape(%ot) : tensor<8x8xf32>
  %wot = transpose(%wo) {permutation = [1, 0]}
  %out = matmul(%om, %wot)
  return %out
}
PIR
tactic megatron-mha "$tactics/megatron.lua" "$tmp/mha.pir" model=2
check "megatron-mha: 2816 FLOPs a device, one all_reduce of 256 B" \
  test "$(fused_costs megatron-mha model=2)" = "2816, all_reduce model 1 256"
check "megatron-mha: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-mha.pir" --mesh model=2 --simulate
# a depthwise product between the two layers of a block (a convolution
# with one feature a group, as the importer writes it: the channels a
# batch dimension, one feature contracted): no contracted dimension to
# split, so its kernel is split along the channels, which the first
# layer's split carries to it, and the block closes at the second layer:
# every FLOP halved, 1120 of 2240 (products 2*4*8*16 = 1024 and
# 2*4*16*8 = 1024, the depthwise one 2*16*4 = 128, tanh 64), one
# all_reduce of the 4 x 8 output (128 B)
cat >"$tmp/dw.pir" <<'PIR'
func @dw(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %kd: tensor<16x1x1xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %h = matmul(%x, %w1)
  %t = transpose(%h) {permutation = [1, 0]}
  %u = reshape(%t) : tensor<16x4x1xf32>
  %d = dot_general(%u, %kd) {lhs_batch = [0], lhs_contract = [2], rhs_batch = [0], rhs_contract = [1]}
  %r = reshape(%d) : tensor<16x4xf32>
  %a = tanh(%r)
  %b = transpose(%a) {permutation = [1, 0]}
  %o = matmul(%b, %w2)
  return %o
}
PIR
tactic megatron-dw "$tactics/megatron.lua" "$tmp/dw.pir" model=2
check "megatron-dw: w1 by columns, the depthwise kernel by channels, w2 by rows" \
  sh -c "grep -q 'partir.slice 1 %w1' '$tmp/megatron-dw.pir' &&
         grep -q 'partir.slice 0 %kd' '$tmp/megatron-dw.pir' &&
         grep -q 'partir.slice 0 %w2' '$tmp/megatron-dw.pir'"
check "megatron-dw: 1120 FLOPs a device, one all_reduce of 128 B" \
  test "$(fused_costs megatron-dw model=2)" = "1120, all_reduce model 1 128"
check "megatron-dw: simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/megatron-dw.pir" --mesh model=2 --simulate

# ---- batch on the MLP: x by rows, one tile
tactic batch-mlp "$tactics/batch.lua" "$ex/mlp.pir" batch=2
expect_regions batch-mlp "tile@batch"
check "batch-mlp: exactly one partir.tile, over batch, and no sum" \
  test "$(count "$tmp/batch-mlp.pir" 'partir\.tile 0 \(%r : !partir\.range<16,8> @"batch"\)')" -eq 1 \
  -a "$(count "$tmp/batch-mlp.pir" 'partir\.(tile|sum) ')" -eq 1
"$PARTIR" fmt "$ex/mlp_tiled.pir" >"$tmp/tiled.txt"
check "batch-mlp: is mlp_tiled.pir with the axis named" \
  sh -c "sed 's/ @\"batch\"//' '$tmp/batch-mlp.pir' | cmp -s - '$tmp/tiled.txt'"
same_outputs batch-mlp "$ex/mlp.pir"
numpy_outputs batch-mlp mlp

# ---- composed with combinators.seq, in both orders
tactic batch-megatron "$compose" "$ex/mlp.pir" batch=2,model=2 --set order=batch,megatron
expect_regions batch-megatron "tile@batch" "tile@batch/sum@model"
same_outputs batch-megatron "$ex/mlp.pir"
numpy_outputs batch-megatron mlp
tactic megatron-batch "$compose" "$ex/mlp.pir" batch=2,model=2 --set order=megatron,batch
expect_regions megatron-batch "sum@model" "sum@model/tile@batch"
check "megatron-batch: the result checks" quiet "$PARTIR" check "$tmp/megatron-batch.pir"
same_outputs megatron-batch "$ex/mlp.pir"
# An embedding lookup, then an MLP block, in both orders.  After
# Megatron, the lookup is a sum over model of each device's rows, and
# the batch tile of the ids (index arithmetic, then a gather of the rows'
# numbers) is used inside it: pulled in, each device still computes its
# batch part once, and the split reaches every layer after.  By hand, a
# device's FLOPs (ids 4x8, rows of 8, w1 8x16, w2 16x8; batch and model
# of 2): the MLP's two products 2 x (2 x 2x8 x 8 x 8) = 4096, tanh on
# 2x8x8 128, and index arithmetic on its 2x8 ids, two compares, an add
# and a sub, 64 (selects and gathers move data): 4288 in either order;
# two all-reduces of the 2x8x8 f32 half batch, 512 B each.
cat >"$tmp/emb.pir" <<'PIR'
func @emb(%ids: tensor<4x8xi32>, %wte: tensor<16x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>) -> tensor<4x8x8xf32> {
  %z = constant() {value = 0} : tensor<4x8xi32>
  %neg = compare(%ids, %z) {direction = LT}
  %n = constant() {value = 16} : tensor<4x8xi32>
  %up = add(%ids, %n)
  %i = select(%neg, %up, %ids)
  %i3 = broadcast_in_dim(%i) {dims = [0, 1]} : tensor<4x8x1xi32>
  %e = gather(%wte, %i3) {collapsed_slice_dims = [0], index_vector_dim = 2, offset_dims = [2], slice_sizes = [1, 8], start_index_map = [0]}
  %h = dot_general(%e, %w1) {lhs_contract = [2], rhs_contract = [0]}
  %a = tanh(%h)
  %y = dot_general(%a, %w2) {lhs_contract = [2], rhs_contract = [0]}
  return %y
}
PIR
for order in batch,megatron megatron,batch; do
  name=emb-$(echo "$order" | tr , -)
  tactic "$name" "$compose" "$tmp/emb.pir" batch=2,model=2 --set order=$order
  "$PARTIR" cost "$tmp/$name.pir" --mesh batch=2,model=2 --hw h100x8 |
    awk '$1 == "FLOPs" { print $1, $2 } $1 ~ /^all_/ { print $1, $2, $4, $5 }' >"$tmp/$name.cost"
  check "$name: 4288 FLOPs a device, 2 all-reduces over model, 1024 B" \
    test "$(tr '\n' ',' <"$tmp/$name.cost")" = "FLOPs 4288,all_reduce model 2 1024,"
  check "$name: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$tmp/$name.pir" --mesh batch=2,model=2 --simulate
done
# A classifier's training step (an MLP block, then an output layer and
# a log-softmax): Megatron's output layer is a last column-parallel one,
# whose logits the softmax's max cannot carry split: gathered, a report
# Megatron tolerates.  Composed either way with batch, neither tactic
# fails on the other's: batch then Megatron follows the logits' origin
# through the batch tile's region; Megatron then batch meets the
# tolerated report again and counts only what it adds.
cat >"$tmp/head.pir" <<'PIR'
func @head(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %wout: tensor<8x12xf32>) -> tensor<4x12xf32> {
  %h = matmul(%x, %w1)
  %a = tanh(%h)
  %r = matmul(%a, %w2)
  %l = matmul(%r, %wout)
  %m = reduce_max(%l) {dims = [1]}
  %mb = broadcast_in_dim(%m) {dims = [0]} : tensor<4x12xf32>
  %s = sub(%l, %mb)
  %e = exp(%s)
  %z = reduce_sum(%e) {dims = [1]}
  %lz = log(%z)
  %lzb = broadcast_in_dim(%lz) {dims = [0]} : tensor<4x12xf32>
  %y = sub(%s, %lzb)
  return %y
}
PIR
if "$PARTIR" grad "$tmp/head.pir" --loss sum --optimizer sgd --lr 0.1 \
  -o "$tmp/head-step.pir" 2>"$tmp/err"; then
  for order in batch-megatron megatron-batch; do
    tactic "head-step-$order" "$top/tests/bench/tactics/$order.lua" \
      "$tmp/head-step.pir" batch=2,model=2 --set inputs=x
    check "head-step-$order: simulated devices agree with the interpreter" \
      quiet "$PARTIR" lower "$tmp/head-step-$order.pir" --mesh batch=2,model=2 --simulate
  done
else
  not_ok "grad of the classifier"
  show "$tmp/err"
fi

# ---- a tactic's program must fit the mesh it was run for: an axis the
# mesh lacks, or a split in other parts than the axis's devices, fails
# the tactic (exit 1, no output) instead of failing when it is lowered
for bad in 'arg_tile("x", 0, 8, "model")|which the mesh does not have' \
  'arg_tile("x", 0, 4, "batch")|has 4 parts but axis'; do
  printf 'return function(s) return s:%s:propagate() end\n' "${bad%%|*}" >"$tmp/unfit.lua"
  rm -f "$tmp/unfit.pir"
  "$PARTIR" tactic "$tmp/unfit.lua" "$ex/mlp.pir" --mesh batch=2 -o "$tmp/unfit.pir" \
    2>"$tmp/err"
  st=$?
  check "a tactic's program that does not fit --mesh batch=2 (${bad%%|*}): refused, nothing written" \
    sh -c "[ $st = 1 ] && [ ! -e '$tmp/unfit.pir' ] && grep -q 'does not fit mesh batch=2' '$tmp/err' &&
           grep -qF '${bad#*|}' '$tmp/err'"
done

# ---- C.seq(require "batch", require "megatron"): Lua 5.4's require
# returns the file it loaded as a second value, which seq takes as
# require's and not as a tactic.  By hand: batch splits x's batch of 2
# over batch (one tile, holding the whole layer, no collective: the
# parameters are replicated); Megatron ends the attention block and the
# MLP in one sum over model each, so each layer lowers to exactly two
# all-reduces over model (2 x 8 x 32 f32 / 2 batch shards = 1024 bytes
# each) and none over batch.
printf 'local C = require "combinators"\nreturn C.seq(require "batch", require "megatron")\n' \
  >"$tmp/require-seq.lua"
tactic require-seq "$tmp/require-seq.lua" "$ex/transformer_layer.pir" batch=2,model=2
expect_regions require-seq "tile@batch" "tile@batch/sum@model" "tile@batch/sum@model"
# collectives FILE [PATTERN]: the collective statements of a lowered
# program (those matching PATTERN too, when given).
collectives() {
  grep -E '= (all_reduce|all_gather|reduce_scatter|all_to_all)\(' "$1" | grep -c -- "${2:-}"
}
"$PARTIR" lower "$tmp/require-seq.pir" --mesh batch=2,model=2 --stats >"$tmp/require-seq.spmd"
check "require-seq: lowers to 2 collectives, all-reduces over model of 1024 bytes each" \
  test "$(collectives "$tmp/require-seq.spmd")" -eq 2 \
  -a "$(collectives "$tmp/require-seq.spmd" 'all_reduce(.*{axes = \[model\], size = 2}')" -eq 2 \
  -a "$(grep -Ec '^  all_reduce over model +2 +2048 bytes$' "$tmp/require-seq.spmd")" -eq 1
same_outputs require-seq "$ex/transformer_layer.pir"
lua5.4 "$ex/models/transformer.lua" --layers 2 >"$tmp/require-tf2.pir"
tactic require-seq-tf2 "$tmp/require-seq.lua" "$tmp/require-tf2.pir" batch=2,model=2
expect_regions require-seq-tf2 "tile@batch" "tile@batch/sum@model" "tile@batch/sum@model" \
  "tile@batch/sum@model" "tile@batch/sum@model"
"$PARTIR" lower "$tmp/require-seq-tf2.pir" --mesh batch=2,model=2 --stats >"$tmp/require-seq-tf2.spmd"
check "require-seq-tf2: two layers lower to 4 collectives, all-reduces over model" \
  test "$(collectives "$tmp/require-seq-tf2.spmd")" -eq 4 \
  -a "$(collectives "$tmp/require-seq-tf2.spmd" 'all_reduce(.*{axes = \[model\], size = 2}')" -eq 4 \
  -a "$(grep -Ec '^  all_reduce over model +4 +4096 bytes$' "$tmp/require-seq-tf2.spmd")" -eq 1
same_outputs require-seq-tf2 "$tmp/require-tf2.pir"

# ---- Megatron on the transformer layer: attention by heads, MLP by
# columns then rows: one sum each
# (tap.sh counts in 'n': the loop uses 'parts')
for parts in 2 4; do
  tactic megatron-tf$parts "$tactics/megatron.lua" "$ex/transformer_layer.pir" model=$parts
  expect_regions megatron-tf$parts "sum@model" "sum@model"
  check "megatron-tf$parts: attention summed over heads (4/$parts each), the MLP over 64/$parts columns" sh -c \
    "grep -q '%attn = partir.sum (%r : !partir.range<4,$((4 / parts))> @\"model\")' '$tmp/megatron-tf$parts.pir' &&
     grep -q '%mlp_out = partir.sum (%r1 : !partir.range<64,$((64 / parts))> @\"model\")' '$tmp/megatron-tf$parts.pir'"
  same_outputs megatron-tf$parts "$ex/transformer_layer.pir"
  numpy_outputs megatron-tf$parts transformer
done

# ---- generated models: one sum per pair of layers, two per transformer layer
lua5.4 "$ex/models/mlp.lua" --layers 4 >"$tmp/mlp4.pir"
tactic megatron-mlp4 "$tactics/megatron.lua" "$tmp/mlp4.pir" model=2
expect_regions megatron-mlp4 "sum@model" "sum@model"
# four layers of 256-wide matmuls reach |y| ~ 6000, where one f32 ulp is
# 5e-4: summing in another order moves small outputs by that much
same_outputs megatron-mlp4 "$tmp/mlp4.pir" 1e-4 1e-3
lua5.4 "$ex/models/transformer.lua" --layers 2 >"$tmp/tf2.pir"
tactic megatron-tf-2layers "$tactics/megatron.lua" "$tmp/tf2.pir" model=2
expect_regions megatron-tf-2layers "sum@model" "sum@model" "sum@model" "sum@model"
same_outputs megatron-tf-2layers "$tmp/tf2.pir"

# ---- ZeRO on the MLP: the weights stored by rows, gathered where used
tactic zero-mlp "$tactics/zero.lua" "$ex/mlp.pir" data=4
expect_regions zero-mlp "tile@data" "tile@data"
check "zero-mlp: w and u are tiled along dim 0 in 4 (range<256,64>), x is not" sh -c \
  "test \$(grep -c 'partir\\.tile 0 (%r1* : !partir\\.range<256,64> @\"data\")' '$tmp/zero-mlp.pir') -eq 2 &&
   grep -q 'partir\\.slice 0 %w\\[' '$tmp/zero-mlp.pir' &&
   grep -q 'partir\\.slice 0 %u\\[' '$tmp/zero-mlp.pir' && ! grep -q '%x\\[' '$tmp/zero-mlp.pir'"
check "zero-mlp: no partir.sum" test "$(count "$tmp/zero-mlp.pir" 'partir\.sum')" -eq 0
same_outputs zero-mlp "$ex/mlp.pir"
numpy_outputs zero-mlp mlp

# ---- GPT-3's shape: generates, loads, and Megatron finds its 192 sums
lua5.4 "$ex/models/transformer.lua" --layers 96 --batch 1 --seq 2048 \
  --d_model 12288 --heads 96 --d_ff 49152 >"$tmp/gpt3.pir"
check "gpt3: the generated program checks" quiet "$PARTIR" check "$tmp/gpt3.pir"
"$PARTIR" tactic "$tactics/megatron.lua" "$tmp/gpt3.pir" --mesh model=8 -o "$tmp/gpt3-m.pir" 2>"$tmp/gpt3.err"
check "gpt3: megatron over 8 gives 2 sums a layer, 192 in all, no tile" sh -c \
  "test \$(grep -c 'partir\\.sum (.* @\"model\")' '$tmp/gpt3-m.pir') -eq 192 &&
   test \$(grep -c 'partir\\.tile' '$tmp/gpt3-m.pir') -eq 0"
check "gpt3: the partitioned program checks" quiet "$PARTIR" check "$tmp/gpt3-m.pir"

# ---- errors: a message and a status, and nothing written
# fails NAME STATUS PATTERN SCRIPT FILE [OPTIONS...]
fails() {
  name=$1 want=$2 pat=$3 script=$4 file=$5
  shift 5
  rm -f "$tmp/$name.pir"
  $VALGRIND "$PARTIR" tactic "$script" "$file" "$@" -o "$tmp/$name.pir" >"$tmp/out" 2>"$tmp/$name.err"
  st=$?
  if [ $st -eq "$want" ] && grep -qF -- "$pat" "$tmp/$name.err" && [ ! -e "$tmp/$name.pir" ]; then
    ok "$name: exits $want, says \"$pat\", writes nothing"
  else
    not_ok "$name: exits $want, says \"$pat\", writes nothing (status $st)"
    show "$tmp/$name.err"
  fi
}
fails no-axis 1 "the mesh has no axis 'model' (mesh: batch=2; use --mesh model=N)" \
  "$tactics/megatron.lua" "$ex/mlp.pir" --mesh batch=2
check "no-axis: the error comes with a Lua traceback" \
  sh -c "grep -q 'stack traceback:' '$tmp/no-axis.err' && grep -q 'megatron.lua:[0-9]*:' '$tmp/no-axis.err'"
fails no-mesh 1 "the mesh has no axis 'batch' (mesh: empty; use --mesh batch=N)" \
  "$tactics/batch.lua" "$ex/mlp.pir"
fails width-100 1 "%w's dimension 1 has size 256, which 100 devices cannot split evenly, nor padded (a width of 3 gives 86 parts)" \
  "$tactics/megatron.lua" "$ex/mlp.pir" --mesh model=100
fails zero-3 1 "zero: 3 devices on 'data' split no dimension of %w (256x256), %u (256x256) evenly" \
  "$tactics/zero.lua" "$ex/mlp.pir" --mesh data=3
# ...unless the user says to keep them whole (issue 14, item 2: it used
# to leave them whole without a word)
printf 'func @f(%%x: tensor<8x4xf32>, %%w: tensor<4x6xf32>, %%b: tensor<3xf32>) -> tensor<8x6xf32> {\n  %%0 = matmul(%%x, %%w)\n  return %%0\n}\n' >"$tmp/odd.pir"
fails zero-odd 1 "zero: 2 devices on 'data' split no dimension of %b (3) evenly" \
  "$tactics/zero.lua" "$tmp/odd.pir" --mesh data=2
tactic zero-whole "$tactics/zero.lua" "$tmp/odd.pir" data=2 --set whole=b
check "zero-whole: w split, b kept whole as asked" sh -c \
  "grep -q 'partir\\.slice 0 %w\\[' '$tmp/zero-whole.pir' && ! grep -q '%b\\[' '$tmp/zero-whole.pir'"
fails batch-dim 1 "argument %x has rank 2: no batch dimension 2" \
  "$tactics/batch.lua" "$ex/mlp.pir" --mesh batch=2 --set dim=2
fails batch-inputs 1 "the program has no argument 'nope'" \
  "$tactics/batch.lua" "$ex/mlp.pir" --mesh batch=2 --set inputs=nope
printf 'func @f(%%a: tensor<4xf32>) -> tensor<4xf32> {\n  %%0 = neg(%%a)\n  return %%0\n}\n' >"$tmp/noweight.pir"
fails no-weight 1 "megatron: no weight (an argument contracted as a right operand, or an embedding table) found" \
  "$tactics/megatron.lua" "$tmp/noweight.pir" --mesh model=2
printf 'return function(s)\n  return s\n' >"$tmp/syntax.lua"
fails syntax 1 "syntax.lua:3: 'end' expected" "$tmp/syntax.lua" "$ex/mlp.pir"
printf 'return function(s) return 42 end\n' >"$tmp/number.lua"
fails non-state 1 "number.lua: the tactic returned a number, not a state" "$tmp/number.lua" "$ex/mlp.pir"
printf 'return function(s) end\n' >"$tmp/nothing.lua"
fails no-result 1 "the tactic returned a nil, not a state" "$tmp/nothing.lua" "$ex/mlp.pir"
printf 'return 42\n' >"$tmp/chunk.lua"
fails non-function 1 "the tactic must return a function(state, mesh, options), not a number" \
  "$tmp/chunk.lua" "$ex/mlp.pir"
printf 'return function(s) error({}) end\n' >"$tmp/table.lua"
fails table-error 1 "(error object is a table value)" "$tmp/table.lua" "$ex/mlp.pir"
printf 'return function(s) return s:arg_tile(0, 0, 17) end\n' >"$tmp/engine.lua"
fails engine-error 1 "width 17 is not between 1 and the size 16" "$tmp/engine.lua" "$ex/mlp.pir"
fails missing-script 1 "no-such-tactic.lua" "$tmp/no-such-tactic.lua" "$ex/mlp.pir"
fails bad-program 1 "no-such.pir" "$tactics/batch.lua" "$tmp/no-such.pir" --mesh batch=2
fails set-no-eq 2 "--set foo: expected KEY=VALUE" "$tactics/batch.lua" "$ex/mlp.pir" --set foo
fails set-no-key 2 "--set =v: expected KEY=VALUE" "$tactics/batch.lua" "$ex/mlp.pir" --set =v
fails mesh-size 2 "expected AXIS=SIZE (a positive size), got 'model=0'" \
  "$tactics/megatron.lua" "$ex/mlp.pir" --mesh model=0
fails mesh-twice 2 "axis 'model' given twice" "$tactics/megatron.lua" "$ex/mlp.pir" --mesh model=2,model=4
printf 'local C = require "combinators"\nlocal t = C.seq(require "batch", "megatron")\nreturn t\n' \
  >"$tmp/seq-string.lua"
fails seq-string 1 "seq-string.lua:2: seq: argument 2 is a string, not a tactic" \
  "$tmp/seq-string.lua" "$ex/mlp.pir" --mesh batch=2

# ---- a propagation report fails the tactic, unless the tactic tolerates
# it: x split by columns of 128 and w by rows of 64 tile w's rows twice
# with different widths, which propagate cannot resolve (the report
# 'partir rewrite' prints as a warning)
conflict='arg-tile %x 1 128; arg-tile %w 0 64; propagate'
report="conflicting tilings of dimension 0: a slice of width 128 of a tile of width 64"
printf 'return function(s)\n  return (s:exec("%s"))\nend\n' "$conflict" >"$tmp/report-exec.lua"
fails report-exec 1 "exec: its passes did not resolve: $report (s:exec(script, {tolerate = true}) accepts it" \
  "$tmp/report-exec.lua" "$ex/mlp.pir"
printf 'return function(s)\n  return (s:arg_tile("x", 1, 128):arg_tile("w", 0, 64):propagate())\nend\n' \
  >"$tmp/report-propagate.lua"
fails report-propagate 1 "propagate did not resolve: $report (s:propagate{tolerate = true}" \
  "$tmp/report-propagate.lua" "$ex/mlp.pir"
"$PARTIR" rewrite "$ex/mlp.pir" --do "$conflict" >"$tmp/report-want.pir" 2>"$tmp/report-want.err"
check "report: 'partir rewrite' of the same script warns and prints the program" \
  grep -qF "mlp.pir: $report" "$tmp/report-want.err"
printf 'return function(s)\n  return (s:exec("%s", { tolerate = true }))\nend\n' "$conflict" \
  >"$tmp/report-tolerated.lua"
tactic report-tolerated "$tmp/report-tolerated.lua" "$ex/mlp.pir" x=1
check "report-tolerated: prints what 'partir rewrite' prints" \
  cmp -s "$tmp/report-tolerated.pir" "$tmp/report-want.pir"
check "report-tolerated: says nothing on stderr" test ! -s "$tmp/report-tolerated.err"
same_outputs report-tolerated "$ex/mlp.pir"
# propagate{tolerate = true} returns the report as its second result
printf 'return function(s)\n  local t, r = s:arg_tile("x", 1, 128):arg_tile("w", 0, 64):propagate { tolerate = true }\n  assert(#r == 1, #r)\n  error(r[1], 0)\nend\n' \
  >"$tmp/report-lines.lua"
fails report-lines 1 "report-lines.lua: $report" "$tmp/report-lines.lua" "$ex/mlp.pir"
printf 'return function(s) return s end\n' >"$tmp/identity.lua"
"$PARTIR" tactic "$tmp/identity.lua" "$ex/mlp.pir" >"$tmp/identity.txt"
"$PARTIR" fmt "$ex/mlp.pir" >"$tmp/mlp.txt"
check "a tactic that returns its input prints the program unchanged" cmp -s "$tmp/identity.txt" "$tmp/mlp.txt"
done_testing
