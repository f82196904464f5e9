#!/bin/sh
# The CUDA runtime on real GPUs (docs/gpu.md): 'partir exec --runtime
# cuda' against the reference interpreter ('partir run'), the .npy files
# of --output compared within fast arithmetic's bound (tests/compiled.sh:
# the GPU's reductions sum in a tree and cuBLAS in its own order, so no
# bit-for-bit comparison), integers exactly.
#
# On: the kernel fixtures that the GPU computes (all but the integer
# contractions), the examples, a 4-layer transformer on one GPU (tiles
# and sums as loops of the host) and, where the machine has the GPUs,
# lowered on meshes of 2 and 4 devices under batch, Megatron and ZeRO and
# the compositions on batch=2,model=2 (NCCL between the GPUs).
#
# Without a GPU (no libcuda.so.1, or no device) the whole script is
# skipped, saying why: tests/ptx.sh checks what can be checked there.
. "$top_srcdir/tests/tap.sh"
. "$top_srcdir/tests/compiled.sh"
PARTIR=${PARTIR:-$top_builddir/repl/partir}

if ! "$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime cuda \
  >/dev/null 2>"$tmp/err"; then
  if grep -q 'no GPU to run on' "$tmp/err"; then
    echo "1..0 # SKIP no GPU: $(sed 's/^partir: --runtime cuda: //' "$tmp/err")"
    exit 0
  fi
  echo "not ok 1 - examples/mlp.pir runs on the GPU"
  show "$tmp/err"
  echo "1..1"
  exit 1
fi
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
echo "# $gpus GPU(s)"

# same NAME FILE [ARGS...]: the GPU's .npy files are the interpreter's
# within the tolerance (with --mesh $mesh when 'mesh' is set).
same() {
  name=$1
  file=$2
  shift 2
  rm -rf "$tmp/run" "$tmp/gpu"
  mkdir -p "$tmp/run" "$tmp/gpu"
  if ! "$PARTIR" run "$file" --output "$tmp/run" "$@" >/dev/null \
    2>"$tmp/err"; then
    not_ok "$name: the interpreter runs it"
    show "$tmp/err"
    return
  fi
  if ! timeout 300 "$PARTIR" exec "$file" --runtime cuda --output "$tmp/gpu" \
    ${mesh:+--mesh "$mesh"} "$@" >/dev/null 2>"$tmp/err"; then
    not_ok "$name: it runs on the GPU${mesh:+ (mesh $mesh)}"
    show "$tmp/err"
    return
  fi
  rel=$(tolerance "$file")
  near "$name" "$tmp/run" "$tmp/gpu" "$rel" || return
  ok "$name: on the GPU${mesh:+ (mesh $mesh)}, within $rel of the interpreter"
}

mesh=
split_kernels "$tmp/kernels"
for file in "$tmp/kernels"/*.pir; do
  name=$(basename "$file" .pir)
  case $name in # cuBLAS has no integer products (tests/ptx.sh)
  dot_general_i64 | matmul_i32 | matmul_i8_wraps) continue ;;
  esac
  same "kernels/$name" "$file"
done
same "examples/mlp.pir" "$top_srcdir/examples/mlp.pir" --seed 3
same "examples/transformer_layer.pir" \
  "$top_srcdir/examples/transformer_layer.pir" --seed 4
same "examples/mlp_tiled.pir" "$top_srcdir/examples/mlp_tiled.pir" --seed 7
lua5.4 "$top_srcdir/examples/models/transformer.lua" --layers 4 --batch 4 \
  --seq 8 --d_model 32 --heads 4 --d_ff 64 >"$tmp/t4.pir"
same "4-layer transformer" "$tmp/t4.pir" --seed 8

# meshes: one GPU a device, where the machine has them
on_mesh() {
  if [ "$gpus" -lt "${3#*=}" ]; then
    echo "# skipped $1, $2 on $3: $gpus GPU(s)"
    return
  fi
  mesh=$3
  same "$1, $2 on $3" "$4" --seed 9
  mesh=
}
each_tactic on_mesh batch:batch=2 megatron:model=2 zero:data=2 batch:batch=4 \
  megatron:model=4 zero:data=4
mesh=
if [ "$gpus" -ge 4 ]; then
  for tactic in batch-megatron batch-megatron-zero; do
    "$PARTIR" tactic "$top_srcdir/tests/bench/tactics/$tactic.lua" \
      "$tmp/t4.pir" --mesh batch=2,model=2 -o "$tmp/c.pir" 2>/dev/null
    mesh=batch=2,model=2
    same "4-layer transformer, $tactic" "$tmp/c.pir" --seed 8
    mesh=
  done
else
  echo "# skipped the compositions on batch=2,model=2: $gpus GPU(s)"
fi
"$PARTIR" exec "$top_srcdir/examples/mlp.pir" --runtime cuda --mesh data=64 \
  >/dev/null 2>"$tmp/err"
status=$?
check "a mesh with more devices than GPUs: exit 1, saying so" \
  sh -c "test $status -eq 1 && grep -q 'runs one device a GPU' '$tmp/err'"
done_testing
