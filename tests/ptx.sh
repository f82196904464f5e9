#!/bin/sh
# The NVPTX target without a GPU (docs/gpu.md): what 'partir compile
# --target nvptx' writes is checked by ptxas, CUDA's own PTX assembler,
# and the launch plan against facts worked out by hand.
#
#   - every kernel fixture (tests/fixtures/kernels.test) compiles to PTX
#     for sm_90 that ptxas accepts, but the three integer contractions,
#     which cuBLAS cannot compute: refused, saying so;
#   - the examples and models, and each tactic on the meshes that
#     tests/codegen.sh runs (batch, Megatron and ZeRO on 2 and 4 devices,
#     the compositions on batch=2,model=2, and those programs on one
#     device with their tiles and sums as loops), for sm_80 and sm_90;
#   - the launch plan of the 2-layer MLP under Megatron on model=2, the
#     reductions and fused kernels of the transformer layer, the PTX's
#     kernels, target and libdevice calls;
#   - bad options are refused, and exec --runtime cuda without a GPU
#     says so and fails.
#
# Where ptxas is absent (no CUDA Toolkit) the PTX is still compiled and
# its kernels counted; the ptxas checks are skipped with a message.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/compiled.sh"
PARTIR=${PARTIR:-$top_builddir/repl/partir}

ptxas=
for p in ${PTXAS:-} ${CUDA_DIR:+$CUDA_DIR/bin/ptxas} /usr/local/cuda/bin/ptxas \
  "$(command -v ptxas 2>/dev/null)"; do
  if [ -x "$p" ]; then
    ptxas=$p
    break
  fi
done
[ -n "$ptxas" ] || echo "# ptxas not found (no CUDA Toolkit): PTX compiled, not assembled"

# valid ARCH FILE.ptx: ptxas assembles it for ARCH (true without ptxas).
valid() {
  [ -z "$ptxas" ] || "$ptxas" -arch="$1" "$2" -o "$tmp/cubin" 2>"$tmp/ptxas"
}

# The kernel fixtures, one file each.
split_kernels "$tmp/kernels"
assembled=0
refused=
for file in "$tmp/kernels"/*.pir; do
  name=$(basename "$file" .pir)
  if ! "$PARTIR" compile "$file" --target nvptx --arch sm_90 --emit ptx \
    -o "$tmp/k.ptx" 2>"$tmp/err"; then
    if grep -q 'the GPU computes contractions with cuBLAS, on floats' "$tmp/err"; then
      refused="$refused $name"
    else
      not_ok "kernels/$name: compiled to PTX"
      show "$tmp/err"
    fi
  elif valid sm_90 "$tmp/k.ptx"; then
    assembled=$((assembled + 1))
  else
    not_ok "kernels/$name: ptxas -arch=sm_90 accepts its PTX"
    show "$tmp/ptxas"
  fi
done
# every fixture but the three integer contractions below
fixtures=$(ls "$tmp/kernels"/*.pir | wc -l)
check "kernel fixtures: $assembled of $fixtures compiled to PTX and assembled by ptxas" \
  test "$assembled" -eq $((fixtures - 3))
check "...the integer contractions refused as cuBLAS's, saying so" \
  test "$refused" = " dot_general_i64 matmul_i32 matmul_i8_wraps"

# ptx NAME FILE [compile options]: PTX for sm_80 and sm_90 that ptxas
# accepts, with at least one kernel when the plan launches one.
ptx() {
  name=$1
  file=$2
  shift 2
  for arch in sm_80 sm_90; do
    if ! "$PARTIR" compile "$file" --target nvptx --arch $arch --emit ptx \
      -o "$tmp/p.ptx" "$@" 2>"$tmp/err"; then
      not_ok "$name: compiled to PTX for $arch"
      show "$tmp/err"
      return
    fi
    if ! valid $arch "$tmp/p.ptx"; then
      not_ok "$name: ptxas -arch=$arch accepts its PTX"
      show "$tmp/ptxas"
      return
    fi
  done
  "$PARTIR" compile "$file" --target nvptx --emit gpu-plan "$@" >"$tmp/plan" \
    2>"$tmp/err"
  launches=$(sed -n 's/^# sm_80: \([0-9]*\) kernel launches.*/\1/p' "$tmp/plan")
  entries=$(grep -c '^.visible .entry' "$tmp/p.ptx")
  if [ -z "$launches" ] || { [ "$launches" -gt 0 ] && [ "$entries" -eq 0 ]; }; then
    not_ok "$name: its plan's kernels are in the PTX"
    show "$tmp/plan"
    return
  fi
  ok "$name: PTX for sm_80 and sm_90${ptxas:+, assembled by ptxas} ($entries kernels, $launches launches)"
}

ptx "examples/mlp.pir" "$top_srcdir/examples/mlp.pir"
ptx "examples/transformer_layer.pir" "$top_srcdir/examples/transformer_layer.pir"
ptx "examples/mlp_tiled.pir (tiles as loops)" "$top_srcdir/examples/mlp_tiled.pir"
ptx "examples/mlp_tiled.pir on batch=2" "$top_srcdir/examples/mlp_tiled.pir" \
  --mesh batch=2
lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
ptx "4-layer transformer" "$tmp/t4.pir"
for tactic in batch-megatron megatron-batch batch-megatron-zero; do
  if "$PARTIR" tactic "$top_srcdir/tests/bench/tactics/$tactic.lua" \
    "$tmp/t4.pir" --mesh batch=2,model=2 -o "$tmp/t4-$tactic.pir" \
    2>"$tmp/err"; then
    ptx "4-layer transformer, $tactic (one device)" "$tmp/t4-$tactic.pir"
    ptx "4-layer transformer, $tactic, on batch=2,model=2" \
      "$tmp/t4-$tactic.pir" --mesh batch=2,model=2
  else
    not_ok "4-layer transformer, $tactic: the tactic runs"
    show "$tmp/err"
  fi
done
# on_mesh PROGRAM TACTIC MESH FILE: FILE lowered on MESH, its device's PTX
on_mesh() { ptx "$1, $2 on $3" "$4" --mesh "$3"; }
each_tactic on_mesh batch:batch=2 batch:batch=4 megatron:model=2 \
  megatron:model=4 zero:data=2 zero:data=4

# The MLP under Megatron on model=2, by hand: x [16, 256] times the
# column half of w [256, 128], then times the row half of u [128, 256]:
# two products (cuBLAS's m = N, n = M), no elementwise kernel, and one
# all_reduce of the partial [16, 256] sums over model.
"$PARTIR" tactic "$top_srcdir/tactics/megatron.lua" \
  "$top_srcdir/examples/mlp.pir" --mesh model=2 -o "$tmp/mlp-mt.pir" 2>/dev/null
"$PARTIR" compile "$tmp/mlp-mt.pir" --mesh model=2 --target nvptx \
  --emit gpu-plan >"$tmp/plan" 2>"$tmp/err"
check "gpu-plan, MLP under Megatron on model=2: no kernel, 2 cuBLAS calls, 1 collective" \
  grep -qx '# sm_80: 0 kernel launches, 2 cuBLAS calls, 1 collectives; arena [0-9]* bytes' "$tmp/plan"
check "...the first product: m=128 n=16 k=256" \
  grep -q 'cublasGemmStridedBatchedEx f32 NN m=128 n=16 k=256 batch=1 (A w lda=128, B x ldb=256' "$tmp/plan"
check "...the second: m=256 n=16 k=128" \
  grep -q 'cublasGemmStridedBatchedEx f32 NN m=256 n=16 k=128 batch=1 (A u lda=256' "$tmp/plan"
check "...then the all_reduce of 16 x 256 over model, last" \
  sh -c "tail -n 1 '$tmp/plan' | grep -q 'ncclAllReduce ncclFloat32 4096 elements over \[model\] of 2'"

# The transformer layer (x: [2, 8, 32], 4 heads of 8): a layer norm's
# row sums are 16 rows of 32 (a block of 32 per row), the softmax's row
# maxima 64 rows of 8 (the smallest block, 32), its exp fuses the
# shift over 2 x 4 x 8 x 8 = 512 elements: 2 blocks of 256.
"$PARTIR" compile "$top_srcdir/examples/transformer_layer.pir" --target nvptx \
  --emit gpu-plan >"$tmp/plan" 2>"$tmp/err"
check "gpu-plan, transformer layer: the row sums a block per row" \
  grep -q '^ln1_sum = reduce_sum_[0-9]*<<<16, 32>>>(ln1_sum, x)$' "$tmp/plan"
check "...the softmax's maxima" \
  grep -q '^scores_max = reduce_max_[0-9]*<<<64, 32>>>(scores_max, scores)$' "$tmp/plan"
check "...exp fusing its shift, one thread an element" \
  grep -q '^exps = exp_[0-9]*<<<2, 256>>>(exps, scores, scores_max)$' "$tmp/plan"
"$PARTIR" compile "$top_srcdir/examples/transformer_layer.pir" --target nvptx \
  --arch sm_90 --emit ptx >"$tmp/tl.ptx" 2>"$tmp/err"
check "ptx: for sm_90 when asked" grep -q '^.target sm_90' "$tmp/tl.ptx"
check "...each reduction's partials in shared memory, a barrier per step" \
  sh -c "grep -q '.shared .align 4 .b8 partials' '$tmp/tl.ptx' && grep -q 'bar.sync' '$tmp/tl.ptx'"
check "...libdevice linked in: no call left to an __nv_ function" \
  sh -c "! grep -q '__nv_' '$tmp/tl.ptx'"
check "...the same kernels as the plan launches (15 kinds)" \
  test "$(grep -c '^.visible .entry' "$tmp/tl.ptx")" -eq 15

# ZeRO's gathers along an inner dimension unpack each member's chunk
"$PARTIR" compile "$tmp/t4-batch-megatron-zero.pir" --mesh batch=2,model=2 \
  --target nvptx --emit gpu-plan >"$tmp/plan" 2>"$tmp/err"
check "gpu-plan, batch-megatron-zero: gathers along an inner dimension unpack per member" \
  grep -q 'ncclAllGather .*; unpack tile_[0-9]*<<<[0-9]*, 256>>>([0-9a-z_]*, stage, member)$' "$tmp/plan"

# Refusals.
# refused STATUS MESSAGE DESCRIPTION COMMAND...: the command exits with
# STATUS, saying MESSAGE.
refused() {
  want=$1
  msg=$2
  d=$3
  shift 3
  "$@" >/dev/null 2>"$tmp/err"
  status=$?
  if [ $status -eq "$want" ] && grep -q -- "$msg" "$tmp/err"; then
    ok "$d"
  else
    not_ok "$d (exit $status)"
    show "$tmp/err"
  fi
}
mlp=$top_srcdir/examples/mlp.pir
refused 1 'exact, --blas and --profile are the CPU' \
  "--target nvptx --exact: refused (fast arithmetic only on the GPU)" \
  "$PARTIR" compile "$mlp" --target nvptx --exact --emit ptx
refused 2 'arch takes sm_80, sm_90' \
  "--arch sm_70: a usage error naming the architectures" \
  "$PARTIR" compile "$mlp" --target nvptx --arch sm_70
refused 2 'target host emits llvm, asm, obj or fusion' \
  "--emit ptx without --target nvptx: a usage error" \
  "$PARTIR" compile "$mlp" --emit ptx
refused 2 'target must be host or nvptx' "--target gpu: a usage error" \
  "$PARTIR" compile "$mlp" --target gpu
refused 2 "runtime threads runs --target host, not 'nvptx'" \
  "exec --target nvptx on the threads runtime: a usage error" \
  "$PARTIR" exec "$mlp" --target nvptx
refused 2 'runtime must be threads or mpi or cuda or cuda-mpi, not' \
  "exec --runtime bogus: a usage error" \
  "$PARTIR" exec "$mlp" --runtime bogus
"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime cuda >"$tmp/out" \
  2>"$tmp/err"
status=$?
if grep -q 'no GPU to run on' "$tmp/err"; then
  check "exec --runtime cuda without a GPU: exit 1, saying so, nothing printed" \
    sh -c "test $status -eq 1 && ! test -s '$tmp/out'"
else
  echo "# a GPU is here: tests/cuda.sh runs on it"
fi
done_testing
