#!/bin/sh
# Uneven sizes (issue 14, item 9): a dimension of 10 over 4 devices.  A
# range<10,3> has ceil(10/3) = 4 parts of 3; the last holds 1 row and 2
# rows of padding.  Tiles drop the padding, sums mask it (the bodies
# below make it non-zero: exp(0) = 1), and every device's chunk is padded
# to 3.  Expected counts and bytes are derived by hand in the comments;
# every lowering runs on simulated devices against the interpreter.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/compiled.sh"

rewrite() { "$PARTIR" rewrite "$1" --do "$2" -o "$3" 2>"$3.err"; }
stats() {
  "$PARTIR" lower "$1" --mesh "$2" --stats | sed -n '/^collectives/,$p' | tail -n +2
}
flops() { "$PARTIR" cost "$1" --mesh "$2" | awk '$1 == "FLOPs" { print $2 }'; }
simulates() {
  check "$(basename "$1" .pir) on $2: simulated devices agree with the interpreter" \
    quiet "$PARTIR" lower "$1" --mesh "$2" --simulate --seed 5
}
# compiles FILE MESH: FILE compiled and run on MESH's threads, each
# result within 1e-5 of the interpreter's on the same inputs (seed 5)
compiles() {
  name="$(basename "$1" .pir) on $2"
  rm -rf "$tmp/run" "$tmp/exec"
  "$PARTIR" run "$1" --seed 5 --output "$tmp/run" >/dev/null
  if ! "$PARTIR" exec "$1" --mesh "$2" --seed 5 --output "$tmp/exec" \
    >/dev/null 2>"$tmp/exec.err"; then
    not_ok "$name: runs compiled on threads"
    show "$tmp/exec.err"
  elif near "$name, compiled" "$tmp/run" "$tmp/exec" 1e-5; then
    ok "$name: compiled on threads, within 1e-5 of the interpreter"
  fi
}

# ---- MLP, batch 10 on batch=4: each device 3 rows, no collective
cat >"$tmp/mlp.pir" <<'EOF'
func @mlp(%x: tensor<10x8xf32>, %w: tensor<8x16xf32>, %u: tensor<16x8xf32>) -> tensor<10x8xf32> {
  %h = matmul(%x, %w)
  %a = tanh(%h)
  %y = matmul(%a, %u)
  return %y
}
EOF
rewrite "$tmp/mlp.pir" "arg-tile %x 0 3 batch; propagate" "$tmp/mlp.b.pir"
check "mlp: arg-tile of width 3 on 10 rows is range<10,3> (4 parts)" \
  grep -qF '%y = partir.tile 0 (%r : !partir.range<10,3> @"batch")' "$tmp/mlp.b.pir"
check "mlp: no collective" test "$(stats "$tmp/mlp.b.pir" batch=4)" = "  none"
"$PARTIR" lower "$tmp/mlp.b.pir" --mesh batch=4 >"$tmp/mlp.spmd"
check "mlp: x and y are 3 rows a device, padded from 10" sh -c \
  "grep -qF '%x: tensor<3x8xf32> {dist = [[\"batch\"], []], global = [10, 0]}' '$tmp/mlp.spmd' &&
   grep -qF '(tensor<3x8xf32> {dist = [[\"batch\"], []], global = [10, 0]})' '$tmp/mlp.spmd'"
check "mlp: partir check reads the padded layouts back" quiet "$PARTIR" check "$tmp/mlp.spmd"
simulates "$tmp/mlp.b.pir" batch=4
# FLOPs counted on the padded chunk: 3 rows a device, as 12 rows split
# evenly over 4 devices would have.
sed 's/10x8/12x8/g' "$tmp/mlp.pir" >"$tmp/mlp12.pir"
rewrite "$tmp/mlp12.pir" "arg-tile %x 0 3 batch; propagate" "$tmp/mlp12.b.pir"
check "mlp: per-device FLOPs of 10 rows over 4 = those of 12 rows over 4 (padded)" \
  test "$(flops "$tmp/mlp.b.pir" batch=4)" = "$(flops "$tmp/mlp12.b.pir" batch=4)"
compiles "$tmp/mlp.b.pir" batch=4

# ---- matmul contracting 10 over model=4, exp on both operands
cat >"$tmp/mm.pir" <<'EOF'
func @f(%x: tensor<6x10xf32>, %w: tensor<10x5xf32>) -> tensor<6x5xf32> {
  %e = exp(%x)
  %v = exp(%w)
  %y = matmul(%e, %v)
  return %y
}
EOF
rewrite "$tmp/mm.pir" "arg-tile %x 1 3 model; propagate" "$tmp/mm.m.pir"
check "matmul: the printed program masks past 10 (iota of 12 against 10)" sh -c \
  "grep -qF 'iota() {dim = 0} : tensor<12xi32>' '$tmp/mm.m.pir' &&
   grep -qF 'constant() {value = 10} : tensor<3xi32>' '$tmp/mm.m.pir' &&
   test \$(grep -c 'select(' '$tmp/mm.m.pir') = 2"
# one all_reduce of the 6x5 f32 partial product: 120 bytes
check "matmul: one all_reduce of 6x5 f32 (120 bytes)" \
  test "$(stats "$tmp/mm.m.pir" model=4 | tr -s ' ')" = " all_reduce over model 1 120 bytes"
simulates "$tmp/mm.m.pir" model=4
compiles "$tmp/mm.m.pir" model=4
# The same sum without the masks: exp(0) * exp(0) = 1 at each of the 2
# padded positions adds 2 to every element, so the interpreter sees it.
cat >"$tmp/mm.nomask.pir" <<'EOF'
func @f(%x: tensor<6x10xf32>, %w: tensor<10x5xf32>) -> tensor<6x5xf32> {
  %y = partir.sum (%r : !partir.range<10,3>) {
    %0 = partir.slice 1 %x[%r]
    %1 = exp(%0)
    %2 = partir.slice 0 %w[%r]
    %3 = exp(%2)
    %4 = matmul(%1, %3)
    partir.yield %4
  }
  return %y
}
EOF
mkdir -p "$tmp/o1" "$tmp/o2" "$tmp/o3"
"$PARTIR" run "$tmp/mm.pir" --seed 2 --output "$tmp/o1" >/dev/null
"$PARTIR" run "$tmp/mm.nomask.pir" --seed 2 --output "$tmp/o2" >/dev/null
check "matmul: without the masks the sum differs (the tests would see one missing)" \
  sh -c "test -s '$tmp/o2/y.npy' && ! cmp -s '$tmp/o1/y.npy' '$tmp/o2/y.npy'"

# ---- softmax over rows split 10 over 4: the row sum is masked (an
# all_reduce of the 4 partial sums, 16 bytes); reduce_max cannot be split
# into a sum, so its operand is gathered: 4x3 f32 a device, 48 bytes.
cat >"$tmp/sm.pir" <<'EOF'
func @f(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %e = exp(%x)
  %s = reduce_sum(%e) {dims = [1]}
  %b = broadcast_in_dim(%s) {dims = [0]} : tensor<4x10xf32>
  %y = div(%e, %b)
  %m = reduce_max(%y) {dims = [1]}
  %c = broadcast_in_dim(%m) {dims = [0]} : tensor<4x10xf32>
  %z = sub(%y, %c)
  return %z
}
EOF
rewrite "$tmp/sm.pir" "arg-tile %x 1 3 model; propagate" "$tmp/sm.m.pir"
check "softmax: one all_reduce (16 bytes), one all_gather for reduce_max (48 bytes)" \
  test "$(stats "$tmp/sm.m.pir" model=4 | tr -s ' ' | tr '\n' '|')" = \
  " all_reduce over model 1 16 bytes| all_gather over model 1 48 bytes|"
simulates "$tmp/sm.m.pir" model=4
# the all_gather of padded chunks keeps 10 of its 12 columns
compiles "$tmp/sm.m.pir" model=4

# ---- errors
check "a width of 4 on 10 gives 3 parts: axis of 4 refused" sh -c \
  "'$PARTIR' rewrite '$tmp/mlp.pir' --do 'arg-tile %x 0 4 batch; propagate' -o '$tmp/w4.pir' 2>/dev/null;
   ! '$PARTIR' lower '$tmp/w4.pir' --mesh batch=4 2>'$tmp/w4.err' &&
   grep -qF 'range<10,4> has 3 parts but axis \"batch\" has 4 devices' '$tmp/w4.err'"
check "a width larger than the size is refused" sh -c \
  "! '$PARTIR' rewrite '$tmp/mlp.pir' --do 'arg-tile %x 0 11 batch' -o '$tmp/w11.pir' 2>'$tmp/w11.err' &&
   grep -qF 'not between 1 and the size 10' '$tmp/w11.err'"

# padding inside padding: an uneven region in another's body is refused
# where it is written, with its position
cat >"$tmp/nest.pir" <<'EOF'
func @f(%x: tensor<5x6xf32>, %w: tensor<6x4xf32>) -> tensor<5x4xf32> {
  %0 = partir.tile 0 (%r : !partir.range<5,2>) {
    %1 = partir.slice 0 %x[%r]
    %2 = partir.sum (%s : !partir.range<6,5>) {
      %3 = partir.slice 1 %1[%s]
      %4 = partir.slice 0 %w[%s]
      %5 = matmul(%3, %4)
      partir.yield %5
    }
    partir.yield %2
  }
  return %0
}
EOF
check "an uneven range nested in another's region is refused at its line" sh -c \
  "! '$PARTIR' check '$tmp/nest.pir' 2>'$tmp/nest.err' &&
   grep -qF 'nest.pir:4:5: error: an uneven range<6,5> inside a region over another uneven range is not supported' '$tmp/nest.err'"

done_testing
