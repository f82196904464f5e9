#!/bin/sh
# The transposes of gather and dynamic_slice, and the gradients they
# carry (issue 16, "VJP rules for every base operator"): scatter_add
# (StableHLO's scatter with an add region) and dynamic_update_slice.  The
# interpreter's values on small cases derived by hand (colliding windows
# added, a scatter window that does not fit left out, update starts
# clamped), compiled alike; bad operands refused with their position;
# StableHLO in and out (a scatter that does not add refused, saying
# why); the gradient of a lookup and of a dynamic_slice by hand; 'partir
# grad' of examples/embedding.pir interpreted, compiled, and data
# parallel: the table's gradient a sum over the batch of each device's
# scatter-add, simulated and compiled against the unpartitioned step.
# (The vjps against finite differences: check-rules in tests/grad.sh;
# against jax.grad: tests/grad-jax.sh.)
. "$top_srcdir/tests/tap.sh"
top=$(cd "$top_srcdir" && pwd)

# ---- the interpreter, by hand
# t = 0 (4x3).  rows: ids [1, 1, 3] add u's rows [1 2 3], [4 5 6],
# [7 8 9]: row 1 = [5 7 9], row 3 = [7 8 9].  With ids [1, -1, 4] the
# second and third windows do not fit (StableHLO leaves them out, where
# gather would clamp): row 1 = [1 2 3] only.  windows: 2x2 windows of u2
# = [[1 2] [3 4]] and [[10 20] [30 40]] at (row, col) (0, 1) and (1, 2)
# of a 3x4 x = 100 everywhere: they overlap at (1, 2), 100 + 3 + 10.
# dus: x2[i][j] = 10 i + j (3x4), a 2x2 update [[-1 -2] [-3 -4]] at
# (2, 1): row 2 is clamped to 1 so the update fits.
cat >"$tmp/values.pir" <<'EOF'
func @f() -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
  %t = constant() {value = 0.0} : tensor<4x3xf32>
  %u = constant() {value = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]} : tensor<3x3xf32>
  %ids = constant() {value = [1, 1, 3]} : tensor<3xi32>
  %rows = scatter_add(%t, %ids, %u) {update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1}
  %far = constant() {value = [1, -1, 4]} : tensor<3xi32>
  %dropped = scatter_add(%t, %far, %u) {update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1}
  %x = constant() {value = 100.0} : tensor<3x4xf32>
  %u2 = constant() {value = [[[1, 2], [3, 4]], [[10, 20], [30, 40]]]} : tensor<2x2x2xf32>
  %at = constant() {value = [[0, 1], [1, 2]]} : tensor<2x2xi32>
  %windows = scatter_add(%x, %at, %u2) {update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1}
  %x2 = constant() {value = [[0, 1, 2, 3], [10, 11, 12, 13], [20, 21, 22, 23]]} : tensor<3x4xf32>
  %v = constant() {value = [[-1, -2], [-3, -4]]} : tensor<2x2xf32>
  %i = constant() {value = 2} : tensor<i32>
  %j = constant() {value = 1} : tensor<i32>
  %dus = dynamic_update_slice(%x2, %v, %i, %j)
  return %rows, %dropped, %windows, %dus
}
EOF
cat >"$tmp/values.want" <<'EOF'
rows = tensor<4x3xf32>
[[0, 0, 0], [5, 7, 9], [0, 0, 0], [7, 8, 9]]
dropped = tensor<4x3xf32>
[[0, 0, 0], [1, 2, 3], [0, 0, 0], [0, 0, 0]]
windows = tensor<3x4xf32>
[[100, 101, 102, 100], [100, 103, 114, 120], [100, 100, 130, 140]]
dus = tensor<3x4xf32>
[[0, 1, 2, 3], [10, -1, -2, 13], [20, -3, -4, 23]]
EOF
"$PARTIR" run "$tmp/values.pir" >"$tmp/values.got" 2>&1
check "scatter_add and dynamic_update_slice: the values derived by hand" \
  cmp -s "$tmp/values.want" "$tmp/values.got"
"$PARTIR" exec "$tmp/values.pir" >"$tmp/values.exec" 2>&1
check "...and compiled" cmp -s "$tmp/values.want" "$tmp/values.exec"
check "the .pir text of scatter_add reads back as itself" \
  sh -c "'$PARTIR' fmt '$tmp/values.pir' >'$tmp/v1.pir' &&
         '$PARTIR' fmt '$tmp/v1.pir' | cmp -s - '$tmp/v1.pir' &&
         grep -qF 'scatter_add(%t, %ids, %u) {index_vector_dim = 1, inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], update_window_dims = [1]}' '$tmp/v1.pir'"

# ---- bad operands: a positioned error each
bad() { # bad DESCRIPTION MESSAGE OPERATOR-LINE
  printf 'func @f(%%t: tensor<5x3xf32>, %%ids: tensor<2xi32>, %%u: tensor<2x3xf32>,\n        %%w: tensor<3x3xf32>, %%f: tensor<2xf32>, %%i: tensor<i32>) -> tensor<i32> {\n  %%e = %s\n  return %%i\n}\n' \
    "$3" >"$tmp/bad.pir"
  if "$PARTIR" check "$tmp/bad.pir" >/dev/null 2>"$tmp/err"; then
    not_ok "$1: refused"
  else
    check "$1: refused at 3:3 ($2)" grep -qF "bad.pir:3:3: error: $2" "$tmp/err"
  fi
}
dims="update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1"
bad "scatter_add at float indices" "'scatter_add' indices must be integers, not f32" \
  "scatter_add(%t, %f, %u) {$dims}"
bad "scatter_add updates of the wrong shape" \
  "'scatter_add' updates are tensor<3x3xf32>: its operand, indices and dimension numbers need tensor<2x3xf32>" \
  "scatter_add(%t, %ids, %w) {$dims}"
bad "scatter_add window dims past the updates" \
  "'scatter_add' attribute 'update_window_dims': dimension 4 out of range for updates of rank 2" \
  "scatter_add(%t, %ids, %u) {update_window_dims = [4], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1}"
bad "scatter_add with gather's slice_sizes" "'scatter_add' has no attribute 'slice_sizes'" \
  "scatter_add(%t, %ids, %u) {$dims, slice_sizes = [1, 3]}"
bad "dynamic_update_slice of an update larger than its operand" \
  "'dynamic_update_slice' update tensor<5x3xf32> does not fit in operand tensor<2x3xf32>" \
  "dynamic_update_slice(%u, %t, %i, %i)"
bad "dynamic_update_slice with one start for two dims" \
  "'dynamic_update_slice' of a rank-2 operand needs an update and 2 start indices, got 3 operands" \
  "dynamic_update_slice(%t, %u, %i)"

# ---- StableHLO: out and back in; a scatter that does not add refused
if "$PARTIR" export "$tmp/values.pir" >"$tmp/values.mlir" 2>"$tmp/err" &&
  "$PARTIR" import "$tmp/values.mlir" -o "$tmp/back.pir" 2>>"$tmp/err"; then
  check "export: stablehlo.scatter with an add region, dynamic_update_slice" \
    sh -c "grep -qF '\"stablehlo.scatter\"(%t, %ids, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({' '$tmp/values.mlir' &&
           grep -qF '\"stablehlo.dynamic_update_slice\"(%x2, %v, %i, %j)' '$tmp/values.mlir'"
  "$PARTIR" run "$tmp/back.pir" >"$tmp/back.got" 2>&1
  check "import of the export: the same values" \
    cmp -s "$tmp/values.want" "$tmp/back.got"
else
  not_ok "export and import of scatter_add and dynamic_update_slice"
  show "$tmp/err"
fi
sed 's/"stablehlo.add"(%0, %1)/"stablehlo.multiply"(%0, %1)/' \
  "$tmp/values.mlir" >"$tmp/mul.mlir"
if "$PARTIR" import "$tmp/mul.mlir" >/dev/null 2>"$tmp/err"; then
  not_ok "a scatter that multiplies: refused"
else
  check "a scatter that multiplies: refused, naming what partir has" \
    grep -qF "'stablehlo.scatter' is not supported: a scatter whose update computation is stablehlo.multiply (partir has scatter_add, and a region that returns its update: a set)" "$tmp/err"
fi

# ---- gradients by hand
# lookup: y = table[ids] * c, ids [1, 1, 3] in a 4x2 table, c = [[1 2]
# [10 20] [100 200]]; with the loss sum, the rows' cotangents are c's
# rows: the table's gradient has row 1 = c0 + c1 = [11 22], row 3 = c2 =
# [100 200], rows 0 and 2 zero.  SGD with lr 1 from a zero table gives
# minus that.  window: z = dynamic_slice(x, 1, 3) {2x2} * c2 of a 3x4 x:
# the column start 3 is clamped to 2, so c2 = [[1 2] [3 4]] lands at
# rows 1-2, columns 2-3.  (The prediction, the first result, is y and z
# joined: the sum loss is the sum of both.)
cat >"$tmp/lookup.pir" <<'EOF'
func @lookup(%ids: tensor<3xi32>, %table: tensor<4x2xf32>, %x: tensor<3x4xf32>) -> tensor<5x2xf32> {
  %rows = gather(%table, %ids) {offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 2]}
  %c = constant() {value = [[1, 2], [10, 20], [100, 200]]} : tensor<3x2xf32>
  %y = mul(%rows, %c)
  %i = constant() {value = 1} : tensor<i32>
  %j = constant() {value = 3} : tensor<i32>
  %w = dynamic_slice(%x, %i, %j) {slice_sizes = [2, 2]}
  %c2 = constant() {value = [[1, 2], [3, 4]]} : tensor<2x2xf32>
  %z = mul(%w, %c2)
  %yz = concatenate(%y, %z) {dim = 0}
  return %yz
}
EOF
/usr/bin/python3 -c "
import numpy as np
np.save('$tmp/ids.npy', np.array([1, 1, 3], np.int32))
np.save('$tmp/table.npy', np.zeros((4, 2), np.float32))
np.save('$tmp/x.npy', np.zeros((3, 4), np.float32))"
cat >"$tmp/lookup.want" <<'EOF'
table_new = tensor<4x2xf32>
[[0, 0], [-11, -22], [0, 0], [-100, -200]]
x_new = tensor<3x4xf32>
[[0, 0, 0, 0], [0, 0, -1, -2], [0, 0, -3, -4]]
loss = tensor<f32>
0
EOF
if "$PARTIR" grad "$tmp/lookup.pir" --loss sum --optimizer sgd --lr 1 \
  -o "$tmp/lookup-step.pir" 2>"$tmp/err"; then
  for how in run exec; do
    "$PARTIR" $how "$tmp/lookup-step.pir" -i "ids=$tmp/ids.npy" \
      -i "table=$tmp/table.npy" -i "x=$tmp/x.npy" >"$tmp/lookup.got" 2>&1
    check "grad of a lookup and a dynamic_slice, by hand ($how)" \
      cmp -s "$tmp/lookup.want" "$tmp/lookup.got"
  done
  check "the ids get no cotangent: they are the step's data, not updated" \
    sh -c "grep -q '^func @lookup_train(%table: tensor<4x2xf32>, %x: tensor<3x4xf32>, %ids: tensor<3xi32>)' '$tmp/lookup-step.pir'"
else
  not_ok "grad of a lookup"
  show "$tmp/err"
fi

# i8 ids in a table of 300 rows: the clamp's limit, 299, is past i8's
# largest value, so it is 127 (every id fits); ids [5, 100, 5] with the
# sum loss and lr 1 from a zero table: row 5 is -2, row 100 -1
cat >"$tmp/i8.pir" <<'EOF'
func @f(%ids: tensor<3xi8>, %table: tensor<300x2xf32>) -> tensor<3x2xf32> {
  %rows = gather(%table, %ids) {offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1, slice_sizes = [1, 2]}
  return %rows
}
EOF
/usr/bin/python3 -c "
import numpy as np
np.save('$tmp/ids8.npy', np.array([5, 100, 5], np.int8))
np.save('$tmp/t300.npy', np.zeros((300, 2), np.float32))"
rm -rf "$tmp/i8-out"
if "$PARTIR" grad "$tmp/i8.pir" --loss sum --optimizer sgd --lr 1 \
  -o "$tmp/i8-step.pir" 2>"$tmp/err" &&
  "$PARTIR" run "$tmp/i8-step.pir" -i "ids=$tmp/ids8.npy" \
    -i "table=$tmp/t300.npy" -o "$tmp/i8-out" >/dev/null 2>>"$tmp/err"; then
  check "grad of a lookup with i8 ids in 300 rows: rows 5 and 100 only" \
    /usr/bin/python3 -c "
import numpy as np, sys
t = np.load('$tmp/i8-out/table_new.npy')
want = np.zeros((300, 2), np.float32)
want[5] = -2
want[100] = -1
sys.exit(0 if np.array_equal(t, want) else 1)"
else
  not_ok "grad of a lookup with i8 ids"
  show "$tmp/err"
fi

# ---- examples/embedding.pir trained: interpreted against compiled, and
# data parallel (ids and target split over batch=2).  Each device
# scatter-adds its half of the batch's rows into a zero table: the
# table's gradient is a partir.sum over batch, one all_reduce of the
# 16x32 f32 table (2048 B), beside the 32x32 projection's (4096 B) and
# the loss's (4 B): 3 all_reduces, 6148 B, nothing in the forward pass.
step=$tmp/embedding-step.pir
if "$PARTIR" grad "$top/examples/embedding.pir" --loss mse --optimizer adam \
  -o "$step" 2>"$tmp/err"; then
  rm -rf "$tmp/e-run" "$tmp/e-exec"
  "$PARTIR" run "$step" --seed 3 -o "$tmp/e-run" >/dev/null 2>"$tmp/err"
  "$PARTIR" exec "$step" --seed 3 -o "$tmp/e-exec" >/dev/null 2>>"$tmp/err"
  near=yes
  for f in "$tmp/e-run"/*.npy; do
    "$FIXTURE_RUNNER" --npy-near "$tmp/e-exec/$(basename "$f")" "$f" 1e-5 \
      >"$tmp/near" 2>&1 && grep -q '^ok' "$tmp/near" || near=no
  done
  check "embedding step: compiled, the interpreter's values" test "$near" = yes
  if "$PARTIR" tactic "$top/tactics/batch.lua" "$step" --mesh batch=2 \
    --set inputs=ids,target -o "$tmp/embedding-dp.pir" 2>"$tmp/err"; then
    check "embedding step, data parallel: the table's gradient sums partial scatter-adds" \
      sh -c "sed -n '/partir.sum .*@\"batch\"/,/^  }/p' '$tmp/embedding-dp.pir' | grep -q 'scatter_add('"
    "$PARTIR" lower "$tmp/embedding-dp.pir" --mesh batch=2 --stats |
      sed -n '/^collectives/,$p' | tail -n +2 >"$tmp/stats"
    check "embedding step, data parallel: 3 all_reduces, 6148 B" \
      grep -Eq '^ +all_reduce over batch +3 +6148 bytes$' "$tmp/stats"
    check "embedding step, data parallel: simulated devices agree with the interpreter" \
      quiet "$PARTIR" lower "$tmp/embedding-dp.pir" --mesh batch=2 --simulate \
      --seed 5
    rm -rf "$tmp/e-dp"
    "$PARTIR" exec "$tmp/embedding-dp.pir" --mesh batch=2 --seed 3 \
      -o "$tmp/e-dp" >/dev/null 2>"$tmp/err"
    near=yes
    for f in "$tmp/e-run"/*.npy; do
      "$FIXTURE_RUNNER" --npy-near "$tmp/e-dp/$(basename "$f")" "$f" 1e-5 \
        >"$tmp/near" 2>&1 && grep -q '^ok' "$tmp/near" || near=no
    done
    check "embedding step, data parallel, compiled on threads: the unpartitioned step's values" \
      test "$near" = yes
  else
    not_ok "embedding step: the batch tactic"
    show "$tmp/err"
  fi
else
  not_ok "grad of examples/embedding.pir"
  show "$tmp/err"
fi


# ---- a zero table as exporters write it: JAX's zeros are a broadcast of
# a scalar 0 (here an integer 0 converted, too).  Split over the batch,
# each device scatter-adds its rows into zeros and the parts are summed:
# a partir.sum over batch, which the simulated devices compute as the
# interpreter does.  A table of twos is not zero: each part would add it
# once, so the batch split cannot pass the scatter, and says so.
zeros() { # zeros SCALAR-CONSTANT SCALAR-EXPRESSION
  cat >"$tmp/zeros.pir" <<EOF
func @f(%ids: tensor<8x1xi32>, %u: tensor<8x8x16xf32>) -> tensor<4x8x16xf32> {
  %c = $1
  %s = $2
  %z = broadcast_in_dim(%s) {dims = []} : tensor<4x8x16xf32>
  %0 = scatter_add(%z, %ids, %u) {index_vector_dim = 1, inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], update_window_dims = [1, 2]}
  return %0
}
EOF
  "$PARTIR" tactic "$top/tactics/batch.lua" "$tmp/zeros.pir" --mesh batch=2 \
    --set inputs=ids,u -o "$tmp/zeros-dp.pir" >"$tmp/out" 2>&1
}
zeros "constant() {value = 0} : tensor<i32>" "convert(%c) : tensor<f32>"
check "a broadcast zero (JAX's zeros): the batch split sums partial scatter-adds" \
  sh -c "sed -n '/partir.sum .*@\"batch\"/,/^  }/p' '$tmp/zeros-dp.pir' | grep -q 'scatter_add('"
check "...and the simulated devices agree with the interpreter" \
  quiet "$PARTIR" lower "$tmp/zeros-dp.pir" --mesh batch=2 --simulate --seed 2
zeros "constant() {value = 1.0} : tensor<f32>" "add(%c, %c)"
check "a broadcast two is not zero: the batch split stops at the scatter, saying so" \
  grep -q "cannot propagate the tiling of operand 2 of 'scatter_add'" "$tmp/out"
done_testing
