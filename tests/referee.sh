#!/bin/sh
# partir against GSPMD and Shardy (issue 14, "A peer as the referee"):
# tests/referee/referee.py partitions small MLPs (examples/mlp.pir, a
# 4-layer examples/models/mlp.lua, the training step examples/mlp_sgd.pir)
# and transformers (examples/models/transformer.lua, heads as a
# dimension and by reshape) with batch, Megatron, both orders of their
# composition, FSDP, and batch + Megatron + ZeRO, in partir and in XLA
# (jax.jit given partir's layouts, on 8 fake CPU devices), and fails
# where partir sends more bytes per device than XLA: a bug in partir.
# docs/spmd.md ("Against GSPMD and Shardy") says why partir sends less
# where it does.
#
# JAX comes from PyPI into the build tree's tests/.venv, installed the
# first time (tests/jax-venv.sh); where it cannot be (no network, no
# python3-venv), the test is skipped with the reason.  REFEREE_VENV names
# another environment.
top=$(cd "$top_srcdir" && pwd)
. "$top/tests/jax-venv.sh"
if ! command -v lua5.4 >/dev/null 2>&1; then
  echo "1..0 # SKIP no lua5.4 to generate the models"
  exit 0
fi
if ! jax_venv "${REFEREE_VENV:-${abs_top_builddir:-.}/tests/.venv}"; then
  echo "1..0 # SKIP JAX is not available: $jax_why"
  exit 0
fi
. "$top/tests/tap.sh"
"$jax_python" "$top/tests/referee/referee.py" --partir "$PARTIR" \
  --top "$top" --tmp "$tmp"
