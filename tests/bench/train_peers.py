#!/usr/bin/env python3
"""train_peers.py -- the NumPy peer of tests/bench/bench-train.sh (issue 16).

    train_peers.py CASE DIR [--runs N] [--heads H] [--lr R]

CASE is mlp or transformer: one training step written by hand in NumPy,
forward and backward, as a NumPy user writes it, of the steps that
bench-train.sh makes with the model generators' --train:
  mlp          examples/models/mlp.lua --train --loss mse --optimizer sgd
               arguments w0..w{L-1}, x, target -> w_new..., loss
  transformer  examples/models/transformer.lua --layers 1 --train --loss
               mse --optimizer momentum
               arguments the 12 weights, their 12 m_, x, target ->
               the 12 new weights, the 12 new m_, loss
DIR holds what bench-codegen --save wrote: the arguments argI.npy (in
the step's order) and the compiled results resI.npy.

Prints the lines of codegen_peers.py: 'run' and 'run_cpu' (median and
minimum ms of N runs after an untimed one, in float32), 'run_load',
'blas', then 'check ok ERR': the same step computed once more in
float64 (untimed) is the reference, and ERR the largest difference of a
compiled result from it over its largest magnitude, the worst of the
results; above 1e-3 it prints 'check bad ERR' and exits 1.  Then
'numpy_err ERR', the timed float32 step's own difference from the
float64 one, for information: Debian's OpenBLAS 0.3.21 with
OPENBLAS_CORETYPE=Cooperlake or SkylakeX was 2e-3 off on the
transformer's weight gradients where partir was 2e-5 off (the reason
the reference is not NumPy's float32 step).
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from codegen_peers import blas_core, load_args, time_runs  # noqa: E402

TOLERANCE = 1e-3
MOMENTUM = 0.9


def mlp_step(lr, args):
    """relu MLP, mean squared error, SGD"""
    *ws, x, target = args
    acts, pre = [x], []
    for i, w in enumerate(ws):
        h = acts[-1] @ w
        pre.append(h)
        if i < len(ws) - 1:
            acts.append(np.maximum(h, 0))
    err = pre[-1] - target
    loss = np.mean(err * err)
    dh = err * np.float32(2 / err.size)
    new = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        grad = acts[i].T @ dh
        if i > 0:
            dh = (dh @ ws[i].T) * (pre[i - 1] > 0)
        new[i] = ws[i] - np.float32(lr) * grad
    return new + [loss]


def layer_norm(x, g, b, eps):
    """transformer.lua's: biased variance; xn and 1/std kept for the
    backward pass"""
    mean = x.mean(axis=2, keepdims=True)
    xc = x - mean
    rstd = 1 / np.sqrt((xc * xc).mean(axis=2, keepdims=True) + eps)
    xn = xc * rstd
    return xn * g + b, xn, rstd


def layer_norm_back(dy, xn, rstd, g):
    """(dx, dg, db) of y = xn g + b"""
    dg = (dy * xn).sum(axis=(0, 1))
    db = dy.sum(axis=(0, 1))
    dxn = dy * g
    dx = rstd * (dxn - dxn.mean(axis=2, keepdims=True) -
                 xn * (dxn * xn).mean(axis=2, keepdims=True))
    return dx, dg, db


def transformer_step(lr, heads, args):
    """one pre-LN layer (transformer.lua), mean squared error, momentum"""
    p, m, x, target = args[:12], args[12:24], args[24], args[25]
    ln1_g, ln1_b, wq, wk, wv, wo, ln2_g, ln2_b, w1, b1, w2, b2 = p
    bsz, seq, d = x.shape
    hd = d // heads
    eps = np.float32(1e-5)
    scale = np.float32(1 / np.sqrt(hd))
    # forward
    h1, xn1, rstd1 = layer_norm(x, ln1_g, ln1_b, eps)
    h1f = h1.reshape(bsz * seq, d)

    def heads_of(w):  # [B*S, D] x [D, H, HD] -> [B, H, S, HD]
        y = (h1f @ w.reshape(d, heads * hd)).reshape(bsz, seq, heads, hd)
        return y.transpose(0, 2, 1, 3)

    q, k, v = heads_of(wq), heads_of(wk), heads_of(wv)
    scores = (q @ k.transpose(0, 1, 3, 2)) * scale
    exps = np.exp(scores - scores.max(axis=3, keepdims=True))
    probs = exps / exps.sum(axis=3, keepdims=True)
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(bsz * seq, d)
    res1 = x + (ctx @ wo.reshape(d, d)).reshape(bsz, seq, d)
    h2, xn2, rstd2 = layer_norm(res1, ln2_g, ln2_b, eps)
    h2f = h2.reshape(bsz * seq, d)
    pre = h2f @ w1 + b1
    act = np.maximum(pre, 0)
    out = res1 + (act @ w2 + b2).reshape(bsz, seq, d)
    err = out - target
    loss = np.mean(err * err)
    # backward
    dout = err * np.float32(2 / err.size)
    doutf = dout.reshape(bsz * seq, d)
    g_w2 = act.T @ doutf
    g_b2 = doutf.sum(axis=0)
    dpre = (doutf @ w2.T) * (pre > 0)
    g_w1 = h2f.T @ dpre
    g_b1 = dpre.sum(axis=0)
    dh2 = (dpre @ w1.T).reshape(bsz, seq, d)
    dres1, g_ln2_g, g_ln2_b = layer_norm_back(dh2, xn2, rstd2, ln2_g)
    dres1 = dres1 + dout
    dres1f = dres1.reshape(bsz * seq, d)
    g_wo = (ctx.T @ dres1f).reshape(heads, hd, d)
    dctx = (dres1f @ wo.reshape(d, d).T).reshape(bsz, seq, heads, hd)
    dctx = dctx.transpose(0, 2, 1, 3)
    dprobs = dctx @ v.transpose(0, 1, 3, 2)
    dv = probs.transpose(0, 1, 3, 2) @ dctx
    dscores = probs * (dprobs - (dprobs * probs).sum(axis=3, keepdims=True))
    dscores *= scale
    dq = dscores @ k
    dk = dscores.transpose(0, 1, 3, 2) @ q

    def weight_grad(dy):  # [B, H, S, HD] -> [D, H, HD], and dh1
        dyf = dy.transpose(0, 2, 1, 3).reshape(bsz * seq, d)
        return h1f.T @ dyf, dyf

    dh1 = np.zeros((bsz * seq, d), x.dtype)
    grads_qkv = []
    for dy, w in ((dq, wq), (dk, wk), (dv, wv)):
        gw, dyf = weight_grad(dy)
        grads_qkv.append(gw.reshape(d, heads, hd))
        dh1 += dyf @ w.reshape(d, d).T
    _, g_ln1_g, g_ln1_b = layer_norm_back(dh1.reshape(bsz, seq, d), xn1,
                                          rstd1, ln1_g)
    grads = [g_ln1_g, g_ln1_b] + grads_qkv + [g_wo, g_ln2_g, g_ln2_b, g_w1,
                                              g_b1, g_w2, g_b2]
    m_new = [np.float32(MOMENTUM) * mi + g for mi, g in zip(m, grads)]
    p_new = [pi - np.float32(lr) * mi for pi, mi in zip(p, m_new)]
    return p_new + m_new + [loss]


def largest_error(got, want):
    """the largest |got - want| over max|want|, the worst of the
    results, or None when their shapes differ"""
    worst = 0.0
    for g, w in zip(got, want):
        g = np.asarray(g, dtype=np.float64)
        w = np.asarray(w, dtype=np.float64)
        if g.shape != w.shape:
            return None
        scale = max(float(np.max(np.abs(w))), 1e-30)
        worst = max(worst, float(np.max(np.abs(g - w))) / scale)
    return worst


def check(d, exact, outs):
    """the compiled results against the float64 step; FALSE when one
    differs"""
    compiled = [np.load(os.path.join(d, "res%d.npy" % i))
                for i in range(len(exact))]
    err = largest_error(compiled, exact)
    ok = err is not None and err <= TOLERANCE
    print("check %s %.3g" % ("ok" if ok else "bad",
                             float("nan") if err is None else err))
    print("numpy_err %.3g" % largest_error(outs, exact))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("case", choices=["mlp", "transformer"])
    ap.add_argument("dir")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.01)
    o = ap.parse_args()
    args = load_args(o.dir)
    if not args:
        print("train_peers: no arguments in %s" % o.dir, file=sys.stderr)
        return 1
    print("blas %s" % blas_core())
    if o.case == "mlp":
        def step(a):
            return mlp_step(o.lr, a)
    else:
        def step(a):
            return transformer_step(o.lr, o.heads, a)
    outs = time_runs(lambda: step(args), o.runs)
    exact = step([a.astype(np.float64) for a in args])
    return 0 if check(o.dir, exact, outs) else 1


if __name__ == "__main__":
    sys.exit(main())
