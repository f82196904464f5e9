#!/usr/bin/env python3
"""codegen_peers.py -- the peers of tests/bench/bench-codegen (issue 13).

    codegen_peers.py PEER CASE DIR [--runs N] [--heads H]
    codegen_peers.py jax CASE DIR --compile-only --shapes AxB,C,...

PEER is numpy or jax, CASE one of mlp, transformer, chain: the same
functions as the .pir programs that tests/bench/bench-codegen.sh makes
(examples/models/mlp.lua, examples/models/transformer.lua, the chain of 8
elementwise ops it writes), written here a second time, operation for
operation, as a NumPy or JAX user would.  DIR holds what bench-codegen
--save wrote: the arguments argI.npy (in the program's order) and the
compiled results resI.npy.

Prints, like bench-codegen, lines NAME MEDIAN_MS MIN_MS, wall clock
(time.perf_counter), N runs (default 5) after one untimed run:

    run       the function on the saved arguments (NumPy: the result is
              computed; JAX: jax.jit of the function, result ready);
    compile   (jax, --compile-only) lowering and compiling jax.jit of
              the function for arguments of --shapes, a fresh function
              each time (nothing cached), and compile_cpu, its CPU time;

then 'run_cpu MEDIAN_MS MIN_MS', the process's CPU time per run (which a
shared machine disturbs far less than the wall time), 'run_load R', all
CPU time over all wall time (about 1 when one thread did the work
undisturbed), 'blas CORE' (numpy: the OpenBLAS core type in use, from
openblas_get_corename), then 'check ok ERR' where ERR is the largest
difference from the compiled result over the largest magnitude of the
result.  When ERR exceeds 1e-3 it prints
'check bad ERR' and exits 1: the compiled code computed something else.
With --compile-only nothing is run or checked (DIR may be empty).
"""

import argparse
import ctypes
import os
import sys
import time

import numpy as np

TOLERANCE = 1e-3


def load_args(d):
    """The saved arguments, in order."""
    out = []
    while os.path.exists(os.path.join(d, "arg%d.npy" % len(out))):
        out.append(np.load(os.path.join(d, "arg%d.npy" % len(out))))
    return out


# -------------------------------------------------------- the functions
# 'xp' is numpy or jax.numpy: the same text computes both.


def mlp(xp, x, *ws):
    """examples/models/mlp.lua: matmuls, a relu after all but the last."""
    h = x
    for i, w in enumerate(ws):
        h = h @ w
        if i < len(ws) - 1:
            h = xp.maximum(h, 0)
    return h


def layer_norm(xp, x, g, b, inv_d, eps):
    """transformer.lua's layer_norm: sums times 1/D, biased variance."""
    mean = xp.sum(x, axis=2) * inv_d
    xc = x - mean[:, :, None]
    var = xp.sum(xc * xc, axis=2) * inv_d
    rstd = 1 / xp.sqrt(var + eps)
    return xc * rstd[:, :, None] * g + b


def layer(xp, heads, x, p):
    """One layer of transformer.lua (weights 'p' in its order)."""
    ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w1, b1, w2, b2 = p
    bsz, seq, d = x.shape
    hd = d // heads
    inv_d = np.float32(1 / d)
    eps = np.float32(1e-5)
    scale = np.float32(1 / np.sqrt(hd))
    h1 = layer_norm(xp, x, ln1_g, ln1_b, inv_d, eps).reshape(bsz * seq, d)

    def heads_of(w):  # [B*S, D] x [D, H, HD] -> [B, H, S, HD]
        y = (h1 @ w.reshape(d, heads * hd)).reshape(bsz, seq, heads, hd)
        return y.transpose(0, 2, 1, 3)

    q, k, v = heads_of(wq), heads_of(wk), heads_of(wv)
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale
    shifted = scores - xp.max(scores, axis=3)[:, :, :, None]
    exps = xp.exp(shifted)
    probs = exps / xp.sum(exps, axis=3)[:, :, :, None]
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(bsz * seq, d)
    res1 = x + (ctx @ wo.reshape(heads * hd, d)).reshape(bsz, seq, d)
    h2 = layer_norm(xp, res1, ln2_g, ln2_b, inv_d, eps)
    hidden = xp.maximum(h2 @ w1 + b1, 0)
    return res1 + (hidden @ w2 + b2)


def transformer(xp, heads, x, *ws):
    """transformer.lua's stack: 12 weights a layer."""
    for i in range(0, len(ws), 12):
        x = layer(xp, heads, x, ws[i:i + 12])
    return x


def chain(xp, x):
    """bench-codegen.sh's chain of 8 elementwise ops."""
    a = x * x
    b = a + x
    c = xp.maximum(b, 0)
    d = c - x
    e = xp.abs(d)
    f = xp.maximum(e, x)
    g = -f
    return xp.minimum(g, x)


# -------------------------------------------------------------- timing


def report(name, times):
    times = sorted(times)
    n = len(times)
    median = times[n // 2] if n % 2 else (times[n // 2 - 1] + times[n // 2]) / 2
    print("%s %.4f %.4f" % (name, median * 1e3, times[0] * 1e3), flush=True)


def time_runs(fn, runs):
    """Runs fn once untimed, then 'runs' times; its last value."""
    out = fn()
    wall, cpu = [], []
    for _ in range(runs):
        cpu0, start = time.process_time(), time.perf_counter()
        out = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - cpu0)
    report("run", wall)
    report("run_cpu", cpu)
    print("run_load %.2f" % (sum(cpu) / sum(wall) if sum(wall) > 0 else 0))
    return out


def blas_core():
    """The core type of the OpenBLAS NumPy uses, or '-'."""
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name)
            get = lib.openblas_get_corename
        except (OSError, AttributeError):
            continue
        get.restype = ctypes.c_char_p
        return get().decode()
    return "-"


def check(want_path, got):
    """Compares 'got' with the compiled result; FALSE when they differ."""
    want = np.load(want_path).astype(np.float64)
    got = np.asarray(got, dtype=np.float64)
    if want.shape != got.shape:
        print("check bad shape %s vs %s" % (want.shape, got.shape))
        return False
    scale = max(float(np.max(np.abs(got))), 1e-30)
    err = float(np.max(np.abs(want - got))) / scale
    ok = err <= TOLERANCE and np.all(np.isfinite(want))
    print("check %s %.3g" % ("ok" if ok else "bad", err))
    return ok


def function_of(o, xp):
    if o.case == "mlp":
        return lambda *a: mlp(xp, *a)
    if o.case == "transformer":
        return lambda *a: transformer(xp, o.heads, *a)
    return lambda *a: chain(xp, *a)


def run_numpy(o, args):
    print("blas %s" % blas_core())
    f = function_of(o, np)
    return time_runs(lambda: f(*args), o.runs)


def jax_compile_times(o, jax, jnp):
    """Lowers and compiles a fresh jax.jit of the function 'runs' times."""
    shapes = [jax.ShapeDtypeStruct(s, jnp.float32) for s in o.shapes]
    wall, cpu = [], []
    for r in range(o.runs + 1):
        fresh = function_of(o, jnp)  # a new function: nothing cached
        cpu0, start = time.process_time(), time.perf_counter()
        jax.jit(fresh).lower(*shapes).compile()
        if r > 0:
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cpu0)
    report("compile", wall)
    report("compile_cpu", cpu)


def run_jax(o, args):
    import jax
    import jax.numpy as jnp

    print("jax %s" % jax.__version__)
    if o.compile_only:
        jax_compile_times(o, jax, jnp)
        return None
    f = jax.jit(function_of(o, jnp))
    dev = [jax.device_put(a) for a in args]
    out = time_runs(lambda: f(*dev).block_until_ready(), o.runs)
    return np.asarray(out)


def parse_shapes(text):
    """'2x8x32,32,...' -> [(2, 8, 32), (32,), ...]"""
    return [tuple(int(n) for n in s.split("x")) for s in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("peer", choices=["numpy", "jax"])
    ap.add_argument("case", choices=["mlp", "transformer", "chain"])
    ap.add_argument("dir")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--shapes", type=parse_shapes,
                    help="argument shapes for --compile-only (AxB,C,...)")
    o = ap.parse_args()
    if o.compile_only:
        if o.peer != "jax" or not o.shapes:
            ap.error("--compile-only is for jax, with --shapes")
        run_jax(o, [])
        return 0
    args = load_args(o.dir)
    if not args:
        print("codegen_peers: no arguments in %s" % o.dir, file=sys.stderr)
        return 1
    out = run_numpy(o, args) if o.peer == "numpy" else run_jax(o, args)
    return 0 if check(os.path.join(o.dir, "res0.npy"), out) else 1


if __name__ == "__main__":
    sys.exit(main())
