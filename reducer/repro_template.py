# This file is the template of the repro.py that ``tvmfuzz reduce`` and ``tvmfuzz report``
# write; reducer/repro.py fills in SCRIPT and CASE. It must run with only TVM and numpy
# installed (no tvmfuzz), so it imports nothing from this repository.
#!/usr/bin/env python3
"""__TITLE__

Found by tvmfuzz; reduced reproducer. Needs only:
    pip install __PIP__
Run:
    python repro.py
Exit status: 1 when the bug reproduces, 0 when the module builds and runs cleanly (the bug
is fixed), 2 when it fails in another way (a different bug, or a changed message).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

SCRIPT = __SCRIPT__

# How the finding built and ran the module, and what it saw.
CASE = json.loads(__CASE__)


def normalize(msg):
    """The first message line without numbers, addresses and generated names."""
    line = (msg or "").strip().splitlines()[0] if (msg or "").strip() else ""
    line = re.sub(r'(?:ir\.)?Op\(span=.*?name="([^"]+)".*?\)(?=\W|$)', r"Op(\1)", line)
    line = re.sub(r"\b0x[0-9a-fA-F]+\b", "0x?", line)
    line = re.sub(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", "N", line)
    line = re.sub(r"\b([A-Za-z_]+?)_?\d+\b", r"\1#", line)
    return re.sub(r"\s+", " ", line).strip()[:160]


def make_inputs(mod):
    import numpy as np

    spec = CASE["inputs"]
    rng = np.random.default_rng(spec["seed"])

    def array(shape, dtype, lo, hi):
        shape = tuple(shape)
        if dtype == "bool":
            return rng.integers(0, 2, size=shape).astype(bool)
        if dtype.startswith(("int", "uint")):
            return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(dtype)
        if dtype == "bfloat16":
            import ml_dtypes

            return rng.uniform(lo, hi, size=shape).astype(ml_dtypes.bfloat16)
        return rng.uniform(lo, hi, size=shape).astype(dtype)

    if spec["how"] == "case":
        for _ in range(spec["dim_draws"]):     # the draws that bound symbolic dims
            rng.choice([1, 2, 3, 4, 5, 8])
        return [array(*p) for p in spec["params"]]
    # A TVMScript file: shapes from main's parameters, symbolic dims bound to 1..4.
    import tvm

    env, out = {}, []
    for p in mod["main"].params:
        if p.name in spec.get("by_name", {}):
            out.append(array(*spec["by_name"][p.name]))
            continue
        shape = []
        for d in p.ty.shape.values:
            if isinstance(d, tvm.tirx.IntImm):
                shape.append(int(d.value))
            else:
                env.setdefault(d.name, int(rng.integers(1, 5)))
                shape.append(env[d.name])
        out.append(array(shape, str(p.ty.dtype), -2, 2))
    return out


def pass_watch(check):
    import tvm
    from tvm import relax

    @tvm.ir.instrument.pass_instrument
    class PassWatch:
        def __init__(self):
            self.current, self.ill_formed_after = None, None

        def run_before_pass(self, mod, info):
            self.current = info.name

        def run_after_pass(self, mod, info):
            if not check or self.ill_formed_after:
                return
            if not any(isinstance(f, relax.Function) for f in mod.functions.values()):
                return
            try:
                ok = relax.analysis.well_formed(mod) is not False
            except Exception:
                ok = False
            if not ok:
                self.ill_formed_after = info.name

    return PassWatch()


def build(mod, v):
    import tvm
    from tvm import relax

    kind = v["target"].get("kind", "llvm")
    target = (tvm.target.Target(v["target"], host={"kind": "llvm"}) if kind == "cuda"
              else tvm.target.Target(v["target"]))
    if v["pipeline"] == "target":
        pipeline = relax.get_default_pipeline(target)
    elif v["pipeline"] == "zero":
        pipeline = tvm.transform.Sequential([relax.get_pipeline("zero"),
                                             relax.pipeline.default_build_pipeline()])
    elif v["pipeline"] == "passes":
        pipeline = tvm.transform.Sequential([getattr(relax.transform, p)() for p in v["passes"]]
                                            + [relax.pipeline.default_build_pipeline()])
    else:
        pipeline = "default"
    if v.get("extra_passes"):
        # A TVM fork's own passes ("module:attr"): importable where this runs.
        import importlib

        extra = []
        for spec in v["extra_passes"]:
            module, _, attr = spec.partition(":")
            obj = getattr(importlib.import_module(module), attr)
            extra.append(obj() if callable(obj) and not hasattr(obj, "info") else obj)
        if pipeline == "default":
            pipeline = relax.pipeline.default_build_pipeline()
        pipeline = tvm.transform.Sequential(extra + [pipeline])
    with target:
        return relax.build(mod, target, relax_pipeline=pipeline, exec_mode=v["exec_mode"])


def run_vm(ex, v, args, workdir):
    import numpy as np
    import tvm
    from tvm import relax

    kind = v["target"].get("kind", "llvm")
    if kind == "c":
        path = os.path.join(workdir, "case.so")
        ex.export_library(path)
        ex = tvm.runtime.load_module(path)
    dev = tvm.cuda(0) if kind == "cuda" else tvm.cpu()
    vm = relax.VirtualMachine(ex, dev)
    out = vm["main"](*[tvm.runtime.tensor(a, dev) for a in args])

    def flat(x):
        if isinstance(x, (list, tuple)) or type(x).__name__ == "Array":
            return [y for i in x for y in flat(i)]
        return [x.numpy() if hasattr(x, "numpy") else np.asarray(x)]

    return flat(out)


def differs(expected, actual, tol):
    import numpy as np

    if len(expected) != len(actual):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e.shape != a.shape:
            return f"output {i}: shape {a.shape}, expected {e.shape}"
        dt = "bfloat16" if "bfloat16" in str(e.dtype) else str(e.dtype)
        if dt in tol:
            ok = np.isclose(a.astype(np.float64), e.astype(np.float64), rtol=tol[dt][0],
                            atol=tol[dt][1], equal_nan=True)
        else:
            ok = e == a
        if not np.all(ok):
            return f"output {i} ({dt}): {int((~ok).sum())}/{ok.size} values differ"
    return ""


def expected_outputs():
    import base64
    import io
    import zlib

    import numpy as np

    data = np.load(io.BytesIO(zlib.decompress(base64.b64decode(CASE["expected"]))))
    return [data[f"arr_{i}"] for i in range(len(data.files))]


def type_problem(rule, got):
    """What of TVM's inferred type ``got`` contradicts ``rule`` (the type numpy's semantics
    give, in tvmfuzz's JSON form); "" when nothing does. The same wording as tvmfuzz's
    fuzz.materialize.type_disagreement, so the messages compare equal."""
    import tvm

    if rule["kind"] == "tuple" or not hasattr(got, "dtype"):
        fields = getattr(got, "fields", None)
        if rule["kind"] != "tuple" or fields is None:
            return f"type: TVM {got}, numpy {rule}"
        if len(fields) != len(rule["fields"]):
            return f"tuple size: TVM {len(fields)}, numpy {len(rule['fields'])}"
        for i, (r, g) in enumerate(zip(rule["fields"], fields)):
            problem = type_problem(r, g)
            if problem:
                return f"{problem} (tuple field {i})"
        return ""
    dtype = "" if got.dtype is None else str(got.dtype)
    if rule["dtype"] and dtype and rule["dtype"] != dtype:
        return f"dtype: TVM {dtype}, numpy {rule['dtype']}"
    if rule["ndim"] >= 0 and got.ndim >= 0 and rule["ndim"] != got.ndim:
        return f"rank: TVM {got.ndim}, numpy {rule['ndim']}"
    dims = got.shape.values if got.shape is not None else []
    for i, (a, b) in enumerate(zip(rule["shape"] or [], dims)):
        if isinstance(a, int) and isinstance(b, tvm.tirx.IntImm) and a != int(b.value):
            b = int(b.value)
            return f"extent of dim {i}: TVM {b}{' (negative)' if b < 0 else ''}, numpy {a}"
    return ""


def inferred_type_problem(mod):
    """A shape-inference finding: the type TVM infers for the named binding's value against
    the one numpy's semantics give."""
    want = CASE["expect_type"]
    for block in mod[want["func"]].body.blocks:
        for b in block.bindings:
            if b.var.name == want["binding"]:
                problem = type_problem(want["type"], b.value.ty)
                if problem:
                    return ("materialize", "InferenceMismatch",
                            f"{want['op']} infers the wrong {problem}", "")
                return None
    return ("parse", "", f"no binding {want['binding']} in the module", "")


def attempt():
    """Parse, verify, build each variant, run, compare: (stage, error type, message, pass) of
    the first failure, or None."""
    import tvm
    from tvm import relax

    near_valid = CASE.get("near_valid", False)
    try:
        # A near-valid module is ill-formed on purpose: the parser must not refuse it.
        mod = tvm.script.from_source(SCRIPT, check_well_formed=not near_valid)
    except Exception as e:
        if CASE.get("kind") == "roundtrip":
            # SCRIPT is what TVM's printer wrote for the module: not parsing back is the bug.
            traceback.print_exc()
            return ("roundtrip", type(e).__name__,
                    "printed module does not parse: " + (str(e).strip().splitlines() or [""])[0],
                    "")
        return ("parse", type(e).__name__, str(e), "")
    if CASE.get("expect_type"):
        return inferred_type_problem(mod)
    try:
        wf = relax.analysis.well_formed(mod) is not False
    except Exception as e:
        if not near_valid:
            return ("well_formed", type(e).__name__, str(e), "")
        wf = False
    if not wf and not near_valid:
        return ("well_formed", "", "the verifier rejects the module", "")
    args = make_inputs(mod)
    first = None
    with tempfile.TemporaryDirectory() as workdir:
        for v in CASE["variants"]:
            watch = pass_watch(wf)
            print(f"building for {json.dumps(v)}", flush=True)
            try:
                with tvm.transform.PassContext(instruments=[watch]):
                    ex = build(mod, v)
            except Exception as e:
                traceback.print_exc()
                if not wf:
                    return None   # verifier and build agree the module is wrong
                return ("build", type(e).__name__, str(e), watch.current or "")
            if watch.ill_formed_after:
                return ("build", "", f"{watch.ill_formed_after} produced ill-formed IR",
                        watch.ill_formed_after)
            if v["target"].get("kind") == "cuda" and not tvm.cuda(0).exist:
                continue
            try:
                out = run_vm(ex, v, args, workdir)
            except Exception as e:
                traceback.print_exc()
                return ("run", type(e).__name__, str(e), "")
            if not wf:
                return ("well_formed", "", "ill-formed module builds and runs", "")
            if CASE.get("expected") and not (set(v["passes"]) & {"ToMixedPrecision"}):
                diff = differs(expected_outputs(), out, CASE["tol"])
                if diff:
                    return ("compare", "", diff, "")
            elif first is not None and CASE.get("kind") == "numeric":
                diff = differs(first, out, CASE["tol"])
                if diff:
                    return ("compare", "", "differs from the first build: " + diff, "")
            first = first if first is not None else out
    if CASE.get("kind") == "roundtrip":
        again = tvm.script.from_source(mod.script(show_meta=True),
                                       check_well_formed=not near_valid)
        try:
            tvm.ir.assert_structural_equal(mod, again, map_free_vars=True)
        except ValueError as e:
            return ("roundtrip", "ValueError", "print/parse round trip changes the module: "
                    + str(e).splitlines()[0], "")
    return None


def main():
    want = CASE["expect"]
    if want["stage"] == "sandbox" and "--child" not in sys.argv:
        # The bug kills the process (signal, hang, memory): watch it from outside.
        try:
            r = subprocess.run([sys.executable, __file__, "--child"], timeout=CASE["timeout"])
        except subprocess.TimeoutExpired:
            print("BUG REPRODUCED: no result within", CASE["timeout"], "s")
            return 1
        if r.returncode < 0:
            print(f"BUG REPRODUCED: the process died by signal {-r.returncode}")
            return 1
        return r.returncode
    got = attempt()
    if got is None:
        print("no failure: the module builds, runs and agrees; the bug does not reproduce")
        return 0
    stage, etype, msg, failing_pass = got
    print(f"\nfailed at stage {stage}: {etype + ': ' if etype else ''}{msg.strip()[:2000]}")
    if failing_pass:
        print(f"during pass: {failing_pass}")
    # An exception is the same when its type and normalized first line are; a verdict
    # without one (verifier disagreement, wrong numbers) when the stage is.
    same = (stage == want["stage"] and etype == want["error_type"]
            and (not etype or normalize(msg) == normalize(want["message"])))
    if same:
        print("BUG REPRODUCED:", want["signature"])
        return 1
    print("a different failure than the one reported:", want["signature"])
    return 2


if __name__ == "__main__":
    sys.exit(main())
