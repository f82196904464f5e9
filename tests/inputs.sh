#!/bin/sh
# Which arguments the tactics take for data when no 'inputs' option
# names them (s:data_args, src/rewrite/inputs.c): exporters list the
# parameters first (PyTorch/XLA, Flax's apply(params, x), partir's own
# training steps), so "the first argument" split a weight.  Expected
# lists worked out by hand from each program's text (below, per check).
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)
ex=$top/examples
hlo=$top/tests/fixtures/stablehlo

cat >"$tmp/data.lua" <<'LUA'
return function(s, mesh, opts)
  local names = {}
  for _, a in ipairs(s:data_args(tonumber(opts.dim or 0))) do
    names[#names + 1] = a.name
  end
  io.stdout:write(table.concat(names, ",") .. "\n")
  return s
end
LUA

# data FILE [DIM]: the names s:data_args gives, comma-separated
data() {
  "$PARTIR" tactic "$tmp/data.lua" "$1" --set dim="${2:-0}" -o /dev/null 2>&1
}

# expect DESCRIPTION WANT FILE [DIM]
expect() {
  got=$(data "$3" "${4:-0}")
  if [ "$got" = "$2" ]; then
    ok "$1"
  else
    not_ok "$1"
    echo "#   want '$2', got '$got'"
  fi
}

# x . w . u: the result's rows are x's rows; w's and u's first
# dimensions are contracted
expect "a program written data first: x" "x" "$ex/mlp.pir"
# a torch-xla linear layer: bias %arg0, weight %arg1 [out, in] (its rows
# are the result's columns), input %arg2
expect "a PyTorch/XLA export lists the parameters first: %arg2" "arg2" \
  "$hlo/torch_xla.mlir"
# a GRU cell: the two weights [48, 8], [48, 16] and biases, x %arg2 [4, 8]
expect "...a GRU cell's input among four parameters: %arg2" "arg2" \
  "$hlo/torch_gru_cell.mlir"
# partir grad's training step: w and u updated (their results say so),
# x and the target carry the batch into the loss's mean
"$PARTIR" grad "$ex/mlp.pir" --loss mse --wrt w,u -o "$tmp/train.pir"
expect "partir's training step, parameters first: x and the target" \
  "x,target" "$tmp/train.pir"
# JAX's SGD step of a 2-layer MLP (x %arg0, y %arg1, w1 %arg2, w2 %arg3):
# the new weights are returned unmarked beside the scalar loss; each is
# w - lr * g, elementwise from its argument: an update, not data
expect "JAX's training step: x and y, not the weights it returns updated" \
  "arg0,arg1" "$hlo/mlp_train_step.mlir"
# JAX's CNN training step returns the loss and the four gradients,
# none an update and none carrying the batch (x %arg0, y %arg1, kernels
# %arg2 to %arg4, the dense %arg5): the loss's mean over the batch reads
# x and y
expect "JAX's CNN step of gradients: x and y" "arg0,arg1" "$hlo/cnn.mlir"
# a forward loss (a scalar): the mean over the batch rows of (x.w - y)^2
cat >"$tmp/loss.pir" <<'EOF'
func @loss(%w: tensor<8x4xf32>, %b: tensor<4xf32>, %x: tensor<6x8xf32>,
           %y: tensor<6x4xf32>) -> tensor<f32> {
  %0 = matmul(%x, %w)
  %1 = broadcast_in_dim(%b) {dims = [1]} : tensor<6x4xf32>
  %2 = add(%0, %1)
  %3 = sub(%2, %y)
  %4 = mul(%3, %3)
  %5 = reduce_sum(%4) {dims = [0, 1]}
  return %5
}
EOF
expect "a scalar loss: the arguments its reduction over the batch reads" \
  "x,y" "$tmp/loss.pir"
# a loss over an embedding lookup: the table's rows are summed over
# when split (a masked lookup), but they are not the batch: the ids
cat >"$tmp/lookup.pir" <<'EOF'
func @g(%t: tensor<16x32xf32>, %ids: tensor<4x8xi32>) -> tensor<f32> {
  %i = broadcast_in_dim(%ids) {dims = [0, 1]} : tensor<4x8x1xi32>
  %e = gather(%t, %i) {collapsed_slice_dims = [0], index_vector_dim = 2, offset_dims = [2], slice_sizes = [1, 32], start_index_map = [0]}
  %s = reduce_sum(%e) {dims = [0, 1, 2]}
  return %s
}
EOF
expect "a loss over an embedding lookup: the ids, not the table" "ids" \
  "$tmp/lookup.pir"
# the residual x + relu(x . w) keeps x's type: not an update (no loss)
cat >"$tmp/res.pir" <<'EOF'
func @res(%w: tensor<8x8xf32>, %x: tensor<6x8xf32>) -> tensor<6x8xf32> {
  %0 = matmul(%x, %w)
  %1 = relu(%0)
  %2 = add(%x, %1)
  return %2
}
EOF
expect "a residual block's output is not read as x's update: x" "x" \
  "$tmp/res.pir"
# dimension 1 (a sequence-first layout's batch): x [S, B, D]
cat >"$tmp/seqfirst.pir" <<'EOF'
func @s(%w: tensor<4x4xf32>, %x: tensor<3x4x4xf32>) -> tensor<3x4x4xf32> {
  %0 = dot_general(%x, %w) {lhs_batch = [], lhs_contract = [2], rhs_batch = [], rhs_contract = [0]}
  return %0
}
EOF
expect "along dimension 1: x, not w (whose dimension 1 is the features')" \
  "x" "$tmp/seqfirst.pir" 1

# The tactics' default: batch splits the data, not the first argument
"$PARTIR" tactic "$top/tactics/batch.lua" "$hlo/torch_xla.mlir" \
  --mesh batch=2 -o "$tmp/b.pir" 2>"$tmp/b.err"
check "batch on a PyTorch/XLA export splits the input's rows, not the bias" \
  sh -c "grep -q 'partir.slice 0 %arg2' '$tmp/b.pir' && ! grep -q 'partir.slice 0 %arg0' '$tmp/b.pir' && ! grep -q 'partir.slice 0 %arg1' '$tmp/b.pir'"
"$PARTIR" lower "$tmp/b.pir" --mesh batch=2 --simulate >"$tmp/b.spmd" 2>&1
check "...and lowers with no collective, the simulation equal to the interpreter" \
  sh -c "grep -q 'the results agree with the interpreter' '$tmp/b.spmd' && ! grep -Eq 'all_reduce|all_gather' '$tmp/b.spmd'"
"$PARTIR" tactic "$top/tactics/batch.lua" "$tmp/train.pir" \
  --mesh batch=2 -o "$tmp/tb.pir" 2>"$tmp/tb.err"
"$PARTIR" cost "$tmp/tb.pir" --mesh batch=2 >"$tmp/tb.cost" 2>&1
# each device: half the batch; the gradients of w and u (256 x 256 f32
# each) and the loss are summed: 3 all_reduces
check "batch on partir's training step: the gradients and the loss all-reduced" \
  grep -Eq '^  all_reduce +batch +2 +3 ' "$tmp/tb.cost"
# an explicit list still wins
expect_opt=$("$PARTIR" tactic "$top/tactics/batch.lua" "$hlo/torch_xla.mlir" \
  --mesh batch=2 --set inputs=arg2 -o "$tmp/bo.pir" 2>&1 && cmp "$tmp/b.pir" "$tmp/bo.pir" && echo same)
check "inputs= names the same split" test "$expect_opt" = same
done_testing
