#!/usr/bin/env python3
"""referee.py -- partir's communication against XLA's (issue 14, "A peer
as the referee").

    referee.py --partir PARTIR --top SRCDIR --tmp DIR [--lua LUA] [--table]
               [--dump DIR]

For each model and strategy below, partir partitions the model with the
strategy's tactic on its mesh ('partir tactic'), and XLA partitions the
same model written in JAX (jax.jit) given exactly partir's layouts: the
argument and result layouts are read from 'partir lower' (each value's
'dist = [["batch"], []]'), so both partitioners start from the same
shardings and must deliver the same ones.  XLA runs on a fake mesh of 8
CPU devices (XLA_FLAGS=--xla_force_host_platform_device_count=8; a
smaller mesh takes the first devices), once with GSPMD and once with
Shardy (jax_use_shardy_partitioner).  Both are counted the same way,
per device, with 'partir cost''s ring formulas (src/spmd/cost.c): over a
group of k devices an all-reduce sends 2(k-1)/k of its buffer, an
all-gather (k-1)/k of its result, a reduce-scatter and an all-to-all
(k-1)/k of their operand.

XLA's partitioned module is read from jax.jit(...).lower(...).compile()
.as_text(), the module after all of XLA's passes:
  - a collective over groups of one device moves nothing and is left
    out;
  - a tuple-shaped all-reduce, all-gather or reduce-scatter (XLA's
    combiners merge independent collectives into one) counts once per
    element, as partir counts one collective per value; a tuple-shaped
    all-to-all is one exchange (its elements are the chunks for the
    group's devices) and counts once;
  - asynchronous pairs count at their -start (the -done moves nothing);
  - a collective-permute sends its buffer from each device whose target
    is another device: its bytes per device are that total over the
    mesh's devices (partir has no permute; it is shown with the axes its
    pairs cross);
  - a collective anywhere but the entry computation (a loop's body,
    whose trip count the text does not give) stops the referee with an
    error rather than being miscounted.

Prints TAP: for each model, that the JAX function computes what partir's
program computes (partir run against jax.jit on the same random inputs);
for each strategy, that partir's collectives are the textbook's (the
kinds and axes each strategy must use, and no others); and for each
strategy and partitioner, that partir sends no more bytes per device
than XLA.  Partir sending more is a bug in partir.  With --table it
prints the comparison as a Markdown table instead (docs/spmd.md); with
--dump it writes each module XLA compiled, to read what XLA chose.

tests/referee.sh runs it with make check's environment; by hand, from a
built tree, with tests/.venv made (tests/jax-venv.sh):

    PARTIR_RULES=rules PARTIR_TACTICS=tactics PARTIR_HW=hw \
      tests/.venv/bin/python tests/referee/referee.py --partir repl/partir \
      --top . --tmp /tmp/referee --table
"""

import argparse
import json
import os
import re
import subprocess
import sys

# before jax is imported: XLA reads them once.  Warnings off: GSPMD
# warns on every compilation that it is deprecated.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

DEVICES = 8


# ------------------------------------------------------------ the models
# Each model is a partir program and the same function in jax.numpy,
# written as a JAX user writes it.  The definitions are shared with
# tests/fixtures/stablehlo/gen_jax.py (which exports them for the
# importer's tests) and tests/bench/codegen_peers.py (the compiled-
# execution benchmark's peers).

class Model:
    def __init__(self, name, program, function, inputs, training=False):
        self.name = name
        self.program = program    # (top, lua, dir) -> path of the .pir
        self.function = function  # () -> the JAX function
        self.inputs = inputs      # the data (--set inputs=...)
        self.training = training  # a training step: gradients are summed


def lua_program(script, args, name):
    def make(top, lua, tmp):
        path = os.path.join(tmp, name + ".pir")
        with open(path, "w") as out:
            subprocess.run([lua, os.path.join(top, script)] + args,
                           stdout=out, check=True)
        return path
    return make


def example(name):
    return lambda top, lua, tmp: os.path.join(top, "examples", name)


def jax_mlp():
    import gen_jax
    return gen_jax.mlp


def jax_relu_mlp():
    import codegen_peers
    import jax.numpy as jnp
    return lambda x, *ws: codegen_peers.mlp(jnp, x, *ws)


def jax_sgd():
    """examples/mlp_sgd.pir: one SGD step (lr 0.05) of relu(x.w1).w2 on
    the mean squared error, the gradients by jax.value_and_grad."""
    import jax
    import jax.numpy as jnp

    def sgd(x, y, w1, w2):
        def loss(w1, w2):
            return jnp.mean((jax.nn.relu(x @ w1) @ w2 - y) ** 2)
        value, (g1, g2) = jax.value_and_grad(loss, argnums=(0, 1))(w1, w2)
        return w1 - 0.05 * g1, w2 - 0.05 * g2, value
    return sgd


def jax_transformer_heads():
    """transformer.lua: the layers of gen_jax.transformer_layer (heads
    kept as a dimension of the projections; d_model 32, 4 heads)."""
    import gen_jax

    def transformer(x, *ws):
        for i in range(0, len(ws), 12):
            x = gen_jax.transformer_layer(x, *ws[i:i + 12])
        return x
    return transformer


def jax_transformer_reshape():
    """transformer.lua --heads-by-reshape: codegen_peers's layers, whose
    heads are split off [D, D] projections by reshape."""
    import codegen_peers
    import jax.numpy as jnp
    return lambda x, *ws: codegen_peers.transformer(jnp, 4, x, *ws)


TRANSFORMER = ["--layers", "2", "--batch", "8", "--seq", "8", "--d_model",
               "32", "--heads", "4", "--d_ff", "64"]
MODELS = [
    Model("mlp", example("mlp.pir"), jax_mlp, "x"),
    Model("relu_mlp", lua_program("examples/models/mlp.lua",
                                  ["--layers", "4", "--batch", "16",
                                   "--width", "64"], "relu_mlp"),
          jax_relu_mlp, "x"),
    Model("mlp_sgd", example("mlp_sgd.pir"), jax_sgd, "x,y", training=True),
    Model("transformer", lua_program("examples/models/transformer.lua",
                                     TRANSFORMER, "transformer"),
          jax_transformer_heads, "x"),
    Model("transformer_reshape",
          lua_program("examples/models/transformer.lua",
                      TRANSFORMER + ["--heads-by-reshape"],
                      "transformer_reshape"),
          jax_transformer_reshape, "x"),
]


# -------------------------------------------------------- the strategies

class Strategy:
    def __init__(self, name, tactic, mesh, textbook, sets=()):
        self.name = name
        self.tactic = tactic      # relative to the source tree
        self.mesh = mesh
        self.textbook = textbook  # model -> {(kind, axes)} partir must use
        self.sets = list(sets)    # more tactic options (--set K=V)


def needs(*kinds, training=()):
    """The collectives a strategy must give: 'kinds' on every model, and
    'training' too on a training step (its gradients' sums)."""
    return lambda m: set(kinds) | (set(training) if m.training else set())


BATCH_SUMS = [("all_reduce", "batch")]  # gradients (and loss) over batch
ZERO_SUMS = [("reduce_scatter", "batch"),  # each keeps its part
             ("all_reduce", "batch")]      # the loss
STRATEGIES = [
    Strategy("batch", "tactics/batch.lua", "batch=8",
             needs(training=BATCH_SUMS)),
    Strategy("megatron", "tactics/megatron.lua", "model=4",
             needs(("all_reduce", "model"))),
    Strategy("batch+megatron", "tests/bench/tactics/batch-megatron.lua",
             "batch=2,model=4",
             needs(("all_reduce", "model"), training=BATCH_SUMS)),
    Strategy("megatron+batch", "tests/bench/tactics/megatron-batch.lua",
             "batch=2,model=4",
             needs(("all_reduce", "model"), training=BATCH_SUMS)),
    Strategy("fsdp", "examples/fsdp.lua", "batch=8",
             needs(("all_gather", "batch"), training=ZERO_SUMS),
             sets=["lift=yes"]),
    Strategy("batch+megatron+zero",
             "tests/bench/tactics/batch-megatron-zero.lua", "batch=2,model=4",
             needs(("all_gather", "batch"), ("all_reduce", "model"),
                   training=ZERO_SUMS), sets=["lift=yes"]),
]


def parse_mesh(text):
    """'batch=2,model=4' -> (['batch', 'model'], [2, 4])"""
    names, sizes = [], []
    for item in text.split(","):
        name, size = item.split("=")
        names.append(name)
        sizes.append(int(size))
    return names, sizes


# ---------------------------------------------------------------- partir

class Partir:
    def __init__(self, exe):
        self.exe = exe

    def __call__(self, *args):
        r = subprocess.run([self.exe] + list(args), capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise RuntimeError("partir %s: %s" % (" ".join(args),
                                                  r.stderr.strip()))
        return r.stdout

    def layouts(self, path, mesh):
        """The lowered program's arguments and results: lists of (name,
        local shape, dtype, dist) from its 'spmd @f(...)' line (a
        result's name is None)."""
        head = self("lower", path, "--mesh", mesh).split("\n")[0]
        arrow = head.index(") -> ")
        found = ([], [])
        dec = json.JSONDecoder()
        for m in re.finditer(r"(?:%([\w.]+): )?tensor<([0-9x]*?)x?"
                             r"([a-z]+[0-9]*)> \{dist = ", head):
            dist, _ = dec.raw_decode(head, m.end())
            shape = tuple(int(d) for d in m.group(2).split("x") if d)
            found[m.start() > arrow].append((m.group(1), shape, m.group(3),
                                             dist))
        return found

    def collectives(self, path, mesh):
        """'partir cost''s collectives: {(kind, axes): (count, bytes)}."""
        out = self("cost", path, "--mesh", mesh)
        rows, on = {}, False
        for line in out.split("\n"):
            if line.startswith("collectives per device"):
                on = True
                continue
            if not line.startswith("  "):
                on = False
            f = line.split()
            if on and f and f[0] != "kind":
                rows[(f[0], f[1])] = (float(f[3]), float(f[4]))
        return rows


# partir's element types as NumPy (and JAX) name them
DTYPES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16",
          "i32": "int32", "i64": "int64", "i1": "bool"}


def global_shape(local, dist, mesh):
    names, sizes = parse_mesh(mesh)
    size = dict(zip(names, sizes))
    return tuple(n * int(np.prod([size[a] for a in axes] or [1]))
                 for n, axes in zip(local, dist))


# -------------------------------------------------------------------- XLA

DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
               "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8,
               "f64": 8}
SHAPE = re.compile(r"\b(%s)\[([0-9,]*)\]" % "|".join(DTYPE_BYTES))
COLLECTIVE = re.compile(
    r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(.*?)\s+"
    r"(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
    r"ragged-all-to-all|collective-broadcast)(-start|-done)?\(")
COMPUTATION = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


def buffers(text):
    """The byte sizes of the arrays in an HLO shape (a tuple's, each)."""
    out = []
    for dtype, dims in SHAPE.findall(text):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        out.append(n * DTYPE_BYTES[dtype])
    return out


def replica_groups(line):
    """The device groups of a collective's replica_groups, in the three
    forms XLA prints: explicit lists, iota lists ([G,S]<=[dims]T(perm))
    and the mesh form (mesh['axis_0'=2,'axis_1'=4] {'axis_0'}: the
    devices numbered row-major over those axes, grouped along the named
    ones)."""
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]([^{]*)\{([^}]*)\}", line)
    if m:
        axes = re.findall(r"'(\w+)'=(\d+)", m.group(1))
        listed = re.findall(r"'(\w+)'", m.group(3))
        if m.group(2).strip() or not re.fullmatch(r"\s*('\w+'\s*,?\s*)*",
                                                  m.group(3)):
            raise ValueError("replica groups the referee cannot read: " +
                             m.group(0))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        keep = [i for i, a in enumerate(names) if a not in listed]
        along = [names.index(a) for a in listed]
        ids = np.arange(int(np.prod(sizes))).reshape(sizes)
        size = int(np.prod([sizes[i] for i in along]))
        return ids.transpose(keep + along).reshape(-1, size).tolist()
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=\[([0-9,]+)\]"
                  r"(?:T\(([0-9,]+)\))?", line)
    if m:
        dims = [int(x) for x in m.group(3).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(4):
            ids = ids.transpose([int(x) for x in m.group(4).split(",")])
        return ids.reshape(int(m.group(1)), int(m.group(2))).tolist()
    m = re.search(r"replica_groups=\{((?:\{[0-9,]*\},?)*)\}", line)
    if m:
        groups = [[int(x) for x in g.split(",") if x]
                  for g in re.findall(r"\{([0-9,]*)\}", m.group(1))]
        return groups or [list(range(DEVICES))]
    raise ValueError("no replica groups the referee can read: " + line)


def axes_crossed(devices, names, sizes):
    """The mesh axes along which 'devices' differ, as partir names them."""
    coords = [np.unravel_index(d, sizes) for d in devices]
    return ",".join(n for i, n in enumerate(names)
                    if len({c[i] for c in coords}) > 1)


def xla_collectives(hlo, names, sizes):
    """XLA's collectives in a compiled module, counted as the module's
    docstring says: {(kind, axes): (count, bytes per device)} and the
    instructions' lines."""
    ndev = int(np.prod(sizes))
    rows, lines, computation = {}, [], None
    for line in hlo.split("\n"):
        c = COMPUTATION.match(line)
        if c:
            computation = "ENTRY" if c.group(1) else c.group(2)
            continue
        m = COLLECTIVE.match(line)
        if not m or m.group(3) == "-done":
            continue
        kind, shape = m.group(2), m.group(1)
        if computation != "ENTRY" or kind in ("ragged-all-to-all",
                                              "collective-broadcast"):
            raise ValueError("a collective the referee cannot count (in "
                             "%s): %s" % (computation, line.strip()))
        lines.append(line.strip())
        sizes_out = buffers(shape)
        if m.group(3) == "-start" and kind == "all-gather":
            sizes_out = sizes_out[len(sizes_out) // 2:]  # (operands, results)
        elif m.group(3) == "-start" and kind == "collective-permute":
            sizes_out = sizes_out[:1]  # (operand, result, contexts)
        if kind == "collective-permute":
            pairs = [(int(s), int(t)) for s, t in re.findall(
                r"\{(\d+),(\d+)\}", line.split("source_target_pairs=")[1]
                .split("}}")[0] + "}")]
            moving = [(s, t) for s, t in pairs if s != t]
            if not moving:
                continue
            axes = set()
            for s, t in moving:
                axes.update(axes_crossed([s, t], names, sizes).split(","))
            key = ("collective_permute",
                   ",".join(n for n in names if n in axes))
            add(rows, key, 1, sizes_out[0] * len(moving) / ndev)
            continue
        groups = replica_groups(line)
        k = len(groups[0])
        if any(len(g) != k for g in groups):
            raise ValueError("groups of different sizes: " + line.strip())
        if k == 1:
            continue
        key = (kind.replace("-", "_"), axes_crossed(groups[0], names, sizes))
        part = (k - 1) / k
        if kind == "all-to-all":
            add(rows, key, 1, part * sum(sizes_out))
            continue
        for b in sizes_out:
            sent = {"all-reduce": 2 * part * b, "all-gather": part * b,
                    "reduce-scatter": (k - 1) * b}[kind]
            add(rows, key, 1, sent)
    return rows, lines


def add(rows, key, count, sent):
    c, s = rows.get(key, (0, 0.0))
    rows[key] = (c + count, s + sent)


def total(rows):
    return sum(b for _, b in rows.values())


def describe(rows):
    if not rows:
        return "nothing"
    return ", ".join("%s over %s x%g %.0f B" % (k[0], k[1], c, b)
                     for k, (c, b) in sorted(rows.items()))


class Xla:
    def __init__(self, dump):
        import jax
        self.dump = dump  # a directory for the compiled modules, or None
        jax.config.update("jax_platforms", "cpu")
        self.jax = jax
        if len(jax.devices()) < DEVICES:
            raise RuntimeError("XLA gives %d CPU devices, not %d" %
                               (len(jax.devices()), DEVICES))

    def partition(self, function, args, results, mesh, shardy, name):
        """XLA's collectives for 'function' with partir's layouts."""
        jax = self.jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        names, sizes = parse_mesh(mesh)
        devices = np.array(jax.devices()[:int(np.prod(sizes))])
        m = Mesh(devices.reshape(sizes), tuple(names))

        def sharding(dist):
            spec = [None if not axes else
                    axes[0] if len(axes) == 1 else tuple(axes)
                    for axes in dist]
            return NamedSharding(m, PartitionSpec(*spec))
        jax.config.update("jax_use_shardy_partitioner", shardy)
        outs = tuple(sharding(d) for _, _, _, d in results)
        jitted = jax.jit(lambda *a: function(*a),  # a fresh function: no cache
                         in_shardings=tuple(sharding(d) for *_, d in args),
                         out_shardings=outs[0] if len(outs) == 1 else outs)
        shapes = [jax.ShapeDtypeStruct(global_shape(s, d, mesh),
                                       jax.numpy.dtype(DTYPES[t]))
                  for _, s, t, d in args]
        hlo = jitted.lower(*shapes).compile().as_text()
        if self.dump:
            with open(os.path.join(self.dump, name + ".hlo"), "w") as out:
                out.write(hlo)
        return xla_collectives(hlo, names, sizes)


# ------------------------------------------------------------------ TAP

# Where partir sends more than a peer, and why (docs/spmd.md, "Against
# GSPMD and Shardy"): each is an open problem, reported as TODO.  (None
# now: relu_mlp under batch+megatron+zero was one until zero.lua weighed
# moving the activations against gathering the parts.)
KNOWN = {}

# ZeRO uses a part in place and moves the activations instead where the
# cost model prices that faster (tactics/zero.lua; docs/spmd.md, "ZeRO:
# the weight or the activations").  On these models the activations are
# the smaller, and these are the collectives that gives: the activations
# re-split (all_to_all) or summed over batch and cut (reduce_scatter)
# where the parts would have been gathered.
LIFTED = {
    ("mlp", "fsdp"): {("all_to_all", "batch"), ("reduce_scatter", "batch")},
    ("mlp", "batch+megatron+zero"): {
        ("all_to_all", "batch"), ("reduce_scatter", "batch"),
        ("all_gather", "batch"), ("all_reduce", "model")},
    ("relu_mlp", "batch+megatron+zero"): {
        ("all_gather", "batch"), ("reduce_scatter", "batch"),
        ("all_reduce", "model")},
}


class Tap:
    def __init__(self, quiet):
        self.n = 0
        self.failed = False
        self.quiet = quiet  # count, print nothing

    def result(self, good, text, details=(), todo=None):
        """A TODO result is a known difference: TAP reports it (XFAIL)
        without failing, and an unexpected pass (XPASS) fails."""
        self.n += 1
        self.failed |= not good and not todo
        if self.quiet:
            return
        print("%s %d - %s%s" % ("ok" if good else "not ok", self.n, text,
                                " # TODO " + todo if todo else ""))
        for d in details:
            print("#   " + d)
        sys.stdout.flush()

    def done(self):
        print("1..%d" % self.n)
        return 1 if self.failed else 0


def same_function(partir, xla, model, path, tmp):
    """Runs partir's program and the JAX function on the same random
    inputs; the largest difference over the largest magnitude."""
    args, _ = partir.layouts(path, "batch=1")  # one device: whole
    rng = np.random.default_rng(14)
    flags, values = [], []
    for name, shape, _, _ in args:
        v = (rng.standard_normal(shape) * 0.25).astype(np.float32)
        f = os.path.join(tmp, "%s.%s.npy" % (model.name, name))
        np.save(f, v)
        flags += ["--input", "%s=%s" % (name, f)]
        values.append(v)
    out = os.path.join(tmp, model.name + ".out")
    text = partir("run", path, "--output", out, *flags)
    results = re.findall(r"^([\w.]+) = ", text, re.M)
    want = [np.load(os.path.join(out, r + ".npy")) for r in results]
    got = xla.jax.jit(model.function())(*values)
    got = got if isinstance(got, tuple) else (got,)
    if len(got) != len(want):
        return float("inf")
    err = 0.0
    for w, g in zip(want, got):
        g = np.asarray(g, dtype=np.float64)
        if w.shape != g.shape:
            return float("inf")
        scale = max(float(np.max(np.abs(w))), 1e-30)
        err = max(err, float(np.max(np.abs(w - g))) / scale)
    return err


def compare(tap, partir, xla, top, lua, tmp):
    """Every model under every strategy, as TAP results on 'tap';
    returns [(model, strategy, partir's rows, {partitioner: (rows,
    lines)})]."""
    found = []
    for model in MODELS:
        path = model.program(top, lua, tmp)
        model.function()  # imports now: a missing peer fails here
        err = same_function(partir, xla, model, path, tmp)
        tap.result(err <= 1e-4, "%s: the JAX function computes partir's "
                   "program (largest difference %.2g of the largest "
                   "value)" % (model.name, err))
        for st in STRATEGIES:
            what = "%s %s on %s" % (model.name, st.name, st.mesh)
            out = os.path.join(tmp, "%s-%s.pir" % (model.name,
                                                   st.name.replace("+", "-")))
            try:
                partir("tactic", os.path.join(top, st.tactic), path, "--mesh",
                       st.mesh, "--set", "inputs=" + model.inputs,
                       *[a for k in st.sets for a in ("--set", k)],
                       "-o", out)
                ours = partir.collectives(out, st.mesh)
                args, results = partir.layouts(out, st.mesh)
            except RuntimeError as e:
                tap.result(False, what + ": partir partitions it", [str(e)])
                continue
            want = LIFTED.get((model.name, st.name)) or st.textbook(model)
            used = {k for k, (_, b) in ours.items()}
            tap.result(used == want, "%s: partir's collectives are the "
                       "textbook's (%s)" % (what, ", ".join(
                           "%s over %s" % k for k in sorted(want)) or "none"),
                       [] if used == want else ["partir: " + describe(ours)])
            theirs = {}
            for shardy, peer in ((False, "GSPMD"), (True, "Shardy")):
                rows, lines = xla.partition(
                    model.function(), args, results, st.mesh, shardy,
                    "%s-%s" % (os.path.basename(out)[:-4], peer))
                theirs[peer] = (rows, lines)
                good = total(ours) <= total(rows) + 0.5
                tap.result(good, "%s, against %s: partir %.0f B <= XLA %.0f B"
                           % (what, peer, total(ours), total(rows)),
                           ["partir: " + describe(ours),
                            "XLA:    " + describe(rows)] +
                           ([] if good else lines),
                           KNOWN.get((model.name, st.name, peer)))
            found.append((model, st, ours, theirs))
    return found


def table(found):
    print("| model | strategy | mesh | partir | GSPMD | Shardy |")
    print("|---|---|---|---|---|---|")
    for model, st, ours, theirs in found:
        cells = ["%.0f B: %s" % (total(r), describe(r)) for r in
                 [ours, theirs["GSPMD"][0], theirs["Shardy"][0]]]
        print("| %s | %s | %s | %s |" % (model.name, st.name, st.mesh,
                                         " | ".join(cells)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--partir", required=True)
    ap.add_argument("--top", required=True, help="the source tree")
    ap.add_argument("--tmp", required=True, help="a scratch directory")
    ap.add_argument("--lua", default="lua5.4")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--dump", metavar="DIR",
                    help="write XLA's compiled modules to DIR/MODEL-"
                    "STRATEGY-PARTITIONER.hlo")
    o = ap.parse_args()
    sys.path[:0] = [os.path.join(o.top, "tests", "fixtures", "stablehlo"),
                    os.path.join(o.top, "tests", "bench")]
    tap = Tap(quiet=o.table)
    found = compare(tap, Partir(o.partir), Xla(o.dump), o.top, o.lua, o.tmp)
    if o.table:
        table(found)
        return 0
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
