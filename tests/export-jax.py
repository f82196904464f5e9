#!/usr/bin/env python3
# tests/export.sh's JAX half: partir's StableHLO exports, run by JAX and
# XLA, must compute what partir's interpreter computes on the original
# program.  Run by tests/export.sh with a python that has JAX
# (PARTIR_JAX_PYTHON); it prints one line per check, "ok - ..." or
# "not ok - ..." (and "# ..." details), which the shell script counts.
#
#   export-jax.py PARTIR TOP_SRCDIR WORKDIR
#
# On 8 simulated CPU devices (XLA_FLAGS=--xla_force_host_platform_
# device_count=8), for each case (a program, a tactic, a mesh):
#
#   1. partir exports the program three ways: --emit stablehlo (the
#      program with sdy.sharding on every argument and result),
#      stablehlo-gspmd (mhlo.sharding strings) and stablehlo-spmd (each
#      device's program with collectives);
#   2. partir's interpreter runs the original program on seeded inputs
#      (partir run), which gives the expected values;
#   3. the Shardy shardings of the export are read back (the mesh, and a
#      PartitionSpec per argument and result) into NamedShardings;
#   4. for the MLP, jax.jit of the model written in jax.numpy with those
#      in_shardings and out_shardings runs on the inputs and must give the
#      expected values, and XLA's own GSPMD form of each sharding of the
#      compiled program must be the string partir wrote in the gspmd
#      export;
#   5. each of the three exported files is compiled by XLA as it is (the
#      Shardy partitioner for the first, GSPMD for the second; the third
#      is a device's program whose every value is {manual}) and run on
#      the inputs laid out by the shardings; each must give the expected
#      values.
#
# The values are compared element by element: integers and booleans
# exactly, floats within 1e-4 of the largest magnitude of the expected
# result (1e-2 for bf16), NaN where partir has NaN.
import os
import re
import subprocess
import sys

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=8")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_enable_x64", True)  # f64 and i64 stay what they are

from jax._src import xla_bridge  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402

PARTIR, TOP, WORK = sys.argv[1:4]
failures = 0


def report(ok, desc, detail=None):
    global failures
    print(("ok - " if ok else "not ok - ") + desc)
    if not ok:
        failures += 1
        for line in str(detail or "").splitlines():
            print("#   " + line)
    sys.stdout.flush()


def partir(*args):
    r = subprocess.run([PARTIR] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("partir %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


# ------------------------------------------------------- reading exports

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": jnp.bfloat16,
          "i8": np.int8, "i32": np.int32, "i64": np.int64, "ui32": np.uint32,
          "i1": np.bool_}


def tensor_type(text):
    """'tensor<16x64xf32>' -> (shape, element type name)."""
    parts = text[len("tensor<"):-1].split("x")
    return tuple(int(d) for d in parts[:-1]), parts[-1]


def dim_axes(spec):
    """'{"batch"}, {}' -> [["batch"], []]."""
    return [re.findall(r'"([^"]+)"', d) for d in re.findall(r"\{[^}]*\}", spec)]


class Export:
    """What an --emit stablehlo file says of the program's interface."""

    def __init__(self, text):
        m = re.search(r"#sdy\.mesh<\[(.*?)\]>", text)
        self.axes = [(n, int(s)) for n, s in
                     re.findall(r'"([^"]+)"=(\d+)', m.group(1))]
        sig = re.search(r"func\.func public @main\((.*)\) -> \((.*)\) \{",
                        text)
        arg = r"%([\w$.-]+): (tensor<[^>]*>) \{sdy\.sharding = " \
              r"#sdy\.sharding<@mesh, \[(.*?)\]>\}"
        res = r"(tensor<[^>]*>) \{sdy\.sharding = #sdy\.sharding<@mesh, " \
              r"\[(.*?)\]>\}"
        self.args = [(n, tensor_type(t), dim_axes(s))
                     for n, t, s in re.findall(arg, sig.group(1))]
        self.results = [(tensor_type(t), dim_axes(s))
                        for t, s in re.findall(res, sig.group(2))]

    def mesh(self):
        n = int(np.prod([s for _, s in self.axes])) if self.axes else 1
        devs = np.array(jax.devices()[:n])
        shape = [s for _, s in self.axes]
        return Mesh(devs.reshape(shape), [a for a, _ in self.axes])

    def sharding(self, mesh, dims):
        spec = [None if not a else (a[0] if len(a) == 1 else tuple(a))
                for a in dims]
        return NamedSharding(mesh, PartitionSpec(*spec))


def gspmd_strings(text):
    sig = re.search(r"func\.func public @main\((.*)\) \{", text).group(1)
    return re.findall(r'mhlo\.sharding = "([^"]*)"', sig)


# ------------------------------------------------------- inputs, results

def make_inputs(exp, seed):
    """Seeded inputs for the export's arguments, and .npy files of them
    for partir run (bf16 as f32, which partir rounds on load)."""
    rng = np.random.default_rng(seed)
    values, opts = [], []
    for name, (shape, dt), _ in exp.args:
        if dt in ("f32", "f64", "bf16"):
            v = (rng.standard_normal(shape) * 0.5 + 0.25).astype(np.float32)
            v = v.astype(DTYPES[dt])
        elif dt == "i1":
            v = rng.standard_normal(shape) > 0
        else:
            v = rng.integers(-5, 5, shape).astype(DTYPES[dt])  # ui32: wraps
        values.append(np.asarray(v))
        path = os.path.join(WORK, "in.%d.%s.npy" % (seed, name))
        np.save(path, v.astype(np.float32) if dt == "bf16" else v)
        opts += ["-i", "%s=%s" % (name, path)]
    return values, opts


def interpreter(program, opts):
    """partir run's results of 'program', in order."""
    out = os.path.join(WORK, "run.%d" % len(os.listdir(WORK)))
    stdout = partir("run", program, "-o", out, *opts)
    names = re.findall(r"^([\w$.]+) = ", stdout, re.M)
    return [np.load(os.path.join(out, n + ".npy")) for n in names]


def compare(got, want):
    """None when 'got' is 'want' as the header says, else why not."""
    got = np.asarray(got)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if want.dtype.kind in "biu":
        bad = np.argwhere(got.astype(np.int64) != want.astype(np.int64))
        return None if not len(bad) else "differs at %s" % bad[:4].tolist()
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN in other places"
    fin = np.isfinite(w)
    if not np.array_equal(g[~fin & ~np.isnan(w)], w[~fin & ~np.isnan(w)]):
        return "infinities differ"
    scale = max(1.0, float(np.max(np.abs(w[fin]), initial=0.0)))
    tol = (1e-2 if got.dtype == jnp.bfloat16 else 1e-4) * scale
    err = float(np.max(np.abs(g[fin] - w[fin]), initial=0.0))
    return None if err <= tol else "off by %g (tolerance %g)" % (err, tol)


def compare_all(gots, wants):
    if len(gots) != len(wants):
        return "%d results, expected %d" % (len(gots), len(wants))
    for k, (g, w) in enumerate(zip(gots, wants)):
        why = compare(g, w)
        if why:
            return "result %d: %s" % (k, why)
    return None


# ------------------------------------------------------------ XLA runs

def whole_parts(shape, dims, sizes):
    """'shape' with each split dimension rounded up to whole parts of
    its axes (an uneven split's chunks padded, as partir's device program
    takes them)."""
    out = []
    for n, axes in zip(shape, dims):
        parts = int(np.prod([sizes[a] for a in axes])) if axes else 1
        out.append(-(-n // parts) * parts)
    return tuple(out)


def run_text(text, exp, inputs, shardy):
    """Compiles an exported module with XLA as it stands, on the devices
    of the export's mesh, and runs it on 'inputs' laid out by the
    export's shardings (a device program receives its part of each);
    returns the global results, and XLA's GSPMD form of the shardings of
    its parameters.  Where the devices do not divide a dimension, each
    device's part is padded with zeros (as XLA and partir's device
    program take it; a jax.Array is split evenly only), and the results'
    padding is dropped."""
    mesh = exp.mesh()
    n = mesh.devices.size
    backend = xla_bridge.get_backend("cpu")
    devs = list(mesh.devices.flat)
    co = xla_client.CompileOptions()
    co.num_partitions = n
    eb = co.executable_build_options
    eb.num_partitions = n
    eb.use_spmd_partitioning = True
    eb.use_shardy_partitioner = shardy
    co.device_assignment = xla_client.DeviceAssignment.create(
        np.arange(n).reshape(1, n))
    exe = backend.compile_and_load(text, xla_client.DeviceList(tuple(devs)),
                                   co)
    sizes = dict(exp.axes)
    args = []
    for v, (_, _, dims) in zip(inputs, exp.args):
        whole = whole_parts(v.shape, dims, sizes)
        v = np.pad(v, [(0, w - n) for n, w in zip(v.shape, whole)])
        args.append(jax.device_put(v, exp.sharding(mesh, dims)))
    outs = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    results = []
    for parts, ((shape, _), dims) in zip(outs, exp.results):
        whole = whole_parts(shape, dims, sizes)
        arr = jax.make_array_from_single_device_arrays(
            whole, exp.sharding(mesh, dims), parts)
        results.append(np.asarray(arr)[tuple(slice(0, n) for n in shape)])
    protos = exe.get_parameter_shardings()  # None on one device
    params = [str(xla_client.HloSharding.from_proto(p))
              for p in protos] if protos is not None else None
    return results, params


# --------------------------------------------------------------- cases

def mlp_relu(x, w0, w1):
    """examples/mlp_jax.mlir (gen_jax.py's mlp_relu)."""
    return jax.nn.relu(x @ w0) @ w1


def case(label, program, mesh, tactic=None, extra=(), model=None, seed=0):
    base = os.path.join(WORK, re.sub(r"[^\w.=-]", "_", label))
    opts = ["--mesh", mesh] + (["--tactic", tactic] if tactic else []) + \
        list(extra)
    texts = {}
    for form in ("stablehlo", "stablehlo-gspmd", "stablehlo-spmd"):
        try:
            texts[form] = partir("export", program, "--emit", form, *opts)
        except RuntimeError as e:
            report(False, "%s: export --emit %s" % (label, form), e)
            return
        with open("%s.%s.mlir" % (base, form), "w") as fh:
            fh.write(texts[form])
    exp = Export(texts["stablehlo"])
    inputs, run_opts = make_inputs(exp, seed)
    want = interpreter(program, run_opts)
    gspmd = gspmd_strings(texts["stablehlo-gspmd"])

    if model:
        jmesh = exp.mesh()
        ins = tuple(exp.sharding(jmesh, d) for _, _, d in exp.args)
        outs = tuple(exp.sharding(jmesh, d) for _, d in exp.results)
        f = jax.jit(model, in_shardings=ins,
                    out_shardings=outs[0] if len(outs) == 1 else outs)
        got = f(*inputs)
        got = [got] if len(outs) == 1 else list(got)
        report(compare_all(got, want) is None,
               "%s: jax.jit with partir's shardings gives partir's values"
               % label, compare_all(got, want))
        compiled = f.lower(*inputs).compile()
        xla = [s._to_xla_hlo_sharding(len(a[1][0])).to_proto()
               for s, a in zip(compiled.input_shardings[0], exp.args)]
        xla += [s._to_xla_hlo_sharding(len(r[0][0])).to_proto()
                for s, r in zip([compiled.output_shardings]
                                if len(outs) == 1 else
                                compiled.output_shardings, exp.results)]
        xla = [str(xla_client.HloSharding.from_proto(p)) for p in xla]
        report(xla == gspmd,
               "%s: XLA's GSPMD strings of those shardings are partir's"
               % label, "XLA:    %s\npartir: %s" % (xla, gspmd))

    sizes = dict(exp.axes)
    uneven = any(whole_parts(shape, dims, sizes) != shape
                 for (_, (shape, _), dims) in exp.args) or \
        any(whole_parts(shape, dims, sizes) != shape
            for ((shape, _), dims) in exp.results)
    for form, shardy in (("stablehlo", True), ("stablehlo-gspmd", False),
                         ("stablehlo-spmd", False)):
        if uneven and form != "stablehlo-spmd":
            # XLA compiles the global form of an uneven split to device
            # programs of its own choosing (5 of 10 rows a device on 4),
            # which no evenly split jax.Array feeds
            print("# %s: the %s export of an uneven split is not run"
                  % (label, form))
            continue
        try:
            got, params = run_text(texts[form], exp, inputs, shardy)
            why = compare_all(got, want)
        except Exception as e:  # noqa: BLE001 (XLA's errors vary)
            got, params, why = None, None, "XLA: %s" % e
        report(why is None, "%s: XLA runs the %s export and gives partir's "
               "values" % (label, form), why)
        if form != "stablehlo-spmd" and params is not None:
            report(params == gspmd[:len(exp.args)],
                   "%s: XLA reads the arguments' %s shardings as partir's "
                   "GSPMD strings" % (label, "Shardy" if shardy else "GSPMD"),
                   "XLA:    %s\npartir: %s" % (params, gspmd))


def main():
    ex = os.path.join(TOP, "examples")
    tactics = os.path.join(TOP, "tactics")
    fx = os.path.join(TOP, "tests", "fixtures")
    batch_megatron = os.path.join(TOP, "tests", "bench", "tactics",
                                  "batch-megatron.lua")
    mlp = os.path.join(ex, "mlp_jax.mlir")
    case("MLP, megatron on model=2", mlp, "model=2",
         os.path.join(tactics, "megatron.lua"), model=mlp_relu)
    case("MLP, batch and megatron on batch=2,model=4", mlp,
         "batch=2,model=4", batch_megatron, model=mlp_relu, seed=1)
    case("MLP, megatron on batch=4,model=2", mlp, "batch=4,model=2",
         os.path.join(tactics, "megatron.lua"), model=mlp_relu, seed=2)
    case("MLP, batch on batch=8", mlp, "batch=8",
         os.path.join(tactics, "batch.lua"), model=mlp_relu, seed=3)
    case("MLP, zero on data=4", mlp, "data=4",
         os.path.join(tactics, "zero.lua"), model=mlp_relu, seed=4)
    case("every operator, one device", os.path.join(fx, "export", "ops.pir"),
         "", seed=5)
    # XLA's shifts, bitwise operations and reductions against partir's
    # interpreter, whole and with the rows split over model
    bitwise = os.path.join(fx, "export", "bitwise.pir")
    case("bitwise operators, one device", bitwise, "", seed=10)
    case("bitwise operators, rows over model=2", bitwise, "model=2",
         extra=["--do", "arg-tile 0 0 1 model; arg-tile 2 0 1 model; "
                "arg-tile 4 0 1 model; propagate"], seed=11)
    spmd = os.path.join(fx, "spmd")
    base = ["--rules", os.path.join(TOP, "rules", "ops.rules"),
            "--rules", os.path.join(TOP, "rules", "partir.rules")]
    for name, mesh in (("reduce_scatter", "model=2"),
                       ("reduce_scatter", "model=2,other=2"),
                       ("all_to_all", "other=2,model=2"),
                       ("keep_split", "model=2,other=2"),
                       ("two_axis_sum", "a=2,b=2")):
        case("%s on %s" % (name, mesh), os.path.join(spmd, name + ".pir"),
             mesh, seed=6)
        case("%s on %s, no [spmd] rules" % (name, mesh),
             os.path.join(spmd, name + ".pir"), mesh, extra=base, seed=7)
    layouts = os.path.join(fx, "export", "layouts.pir")
    for label, mesh, script in (
            ("rows over model, columns over batch", "batch=2,model=2",
             "arg-tile 0 0 4 model; arg-tile 0 1 4 batch; propagate"),
            ("rows over model then batch", "batch=2,model=2",
             "arg-tile 0 0 4 model; tile %1 0 2 batch; propagate"),
            ("three axes, one replicating", "a=2,b=2,c=2",
             "arg-tile 0 0 4 b; arg-tile 0 1 4 c; propagate"),
            ("an axis of one device", "one=1,b=2",
             "arg-tile 0 0 4 b; arg-tile 1 0 4 one; propagate")):
        case("layouts, " + label, layouts, mesh, extra=["--do", script],
             seed=9)
    case("two tiles, one sum, unrolled",
         os.path.join(fx, "export", "loops.pir"), "model=2", seed=8)
    # uneven splits (padded chunks): 10 rows over 4 devices, a product
    # contracting 10 over 4 (its sum masked), and Megatron's 7 columns
    # over 4 gathered for the softmax (an all_gather that drops the
    # padding)
    case("uneven rows, 10 over batch=4",
         os.path.join(fx, "export", "uneven_rows.pir"), "batch=4",
         extra=["--do", "arg-tile %x 0 3 batch; propagate"], seed=9)
    case("uneven contraction, 10 over model=4",
         os.path.join(fx, "export", "uneven_sum.pir"), "model=4",
         extra=["--do", "arg-tile %x 1 3 model; propagate"], seed=10)
    case("uneven columns gathered, 7 over model=4",
         os.path.join(fx, "export", "uneven_head.pir"), "model=4",
         os.path.join(tactics, "megatron.lua"), seed=11)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
