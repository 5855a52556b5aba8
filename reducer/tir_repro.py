"""repro.py for a TIR case: a standalone script that needs only ``pip install apache-tvm numpy``.

It embeds the PrimFunc's TVMScript, the schedule as TVM's own trace (``Schedule.trace``
printed as Python, so no tvmfuzz code is needed to replay it), the TIR pass order, the target,
the input arrays and, for wrong-result findings, the numpy reference's result; then it parses,
schedules, builds, runs and says whether the failure happened again (exit 1) or not (exit 0).
"""
from __future__ import annotations

import base64
import io
import json
import zlib
from typing import Optional

import numpy as np

from fuzz.outcome import Outcome

HEADER = '''#!/usr/bin/env python3
"""{title}

Standalone reproducer written by tvmfuzz (TIR case). Needs: pip install {pip}
Exit status: 1 when the failure reproduces, 0 when it does not, 2 when it fails differently.
"""
import base64, io, json, os, sys, traceback, zlib


def _own_trouble(etype, value, tb):
    """An exception nobody caught is this script's own trouble, never the bug: Python's exit
    status 1 would read as REPRODUCED."""
    traceback.print_exception(etype, value, tb)
    print("could not run the reproducer (not the bug): exit 2", flush=True)
    os._exit(2)


sys.excepthook = _own_trouble

import numpy as np  # noqa: E402
import tvm  # noqa: E402
from tvm.script import tirx as T  # noqa: E402,F401  (the parser binds T itself)

SCRIPT = {script}
CASE = json.loads({case})


def arrays(blob):
    return dict(np.load(io.BytesIO(zlib.decompress(base64.b64decode(blob)))))


def judge_exception(e, expect):
    first = (str(e).strip().splitlines() or [""])[0]
    print(f"{{type(e).__name__}}: {{first}}")
    same = expect["kind"] != "numeric" and expect["message"][:60].split(": ", 1)[-1] in str(e)
    print("REPRODUCED" if same else "a different failure: expected " + expect["message"])
    return 1 if same else 2


def main():
    expect = CASE["expect"]
    if expect["kind"] in ("signal", "hang") and "--child" not in sys.argv:
        # The bug kills the process: watch a child from outside.
        # Memory damage now and then deadlocks the allocator instead of killing the process:
        # a death by signal gets three tries.
        import signal, subprocess
        for _ in range(3 if expect["kind"] == "signal" else 1):
            try:
                r = subprocess.run([sys.executable, __file__, "--child"],
                                   timeout=300 if expect["kind"] == "hang" else 90)
                break
            except subprocess.TimeoutExpired:
                if expect["kind"] == "hang":
                    print("REPRODUCED: no result within 300 s")
                    return 1
                print("no result within 90 s: trying again")
        else:
            return 2
        if r.returncode < 0:
            print(f"REPRODUCED: the process died by {{signal.Signals(-r.returncode).name}}")
            return 1
        print(f"the process ended with exit status {{r.returncode}}, not by a signal")
        return 2 if r.returncode else 0
    try:
        mod = tvm.IRModule({{CASE["name"]: tvm.script.from_source(SCRIPT)}})
'''

BODY = '''        if CASE["schedule"]:
            sch = tvm.s_tir.Schedule(mod)
            sch.work_on(CASE["name"])
            exec(CASE["schedule"], {"sch": sch, "T": T, "tvm": tvm})   # TVM's trace, as printed
            mod = sch.mod
            # The schedule must leave well-formed TIR (s_tir's verifier knows blocks; 0.25 and
            # 0.26 have only tirx's).
            check = getattr(getattr(tvm.s_tir, "analysis", None), "verify_well_formed", None)
            (check or tvm.tirx.analysis.verify_well_formed)(mod, True)
    except Exception as e:  # noqa: BLE001
        return judge_exception(e, expect)
    if expect["kind"] == "roundtrip":
        # Print the (scheduled) PrimFunc and parse the printed text back, as tvmfuzz did: it
        # should parse, and to a structurally equal module.
        try:
            again = tvm.script.from_source(mod.script())
            if not isinstance(again, tvm.IRModule):
                again = tvm.IRModule({CASE["name"]: again})
            tvm.ir.assert_structural_equal(mod, again, map_free_vars=True)
        except Exception as e:  # noqa: BLE001
            print(f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")
            print("REPRODUCED: the printed PrimFunc does not parse back to the same one")
            return 1
        print("print/parse round trip keeps the module: not reproduced")
        return 0
    try:
        target = tvm.target.Target(CASE["target"])
        inputs = arrays(CASE["inputs"])
        if CASE["passes"]:
            # tvmfuzz's pass order (the random one, then what TVM's default pipeline has left
            # after it), on the module with its target bound, then code generation only.
            with tvm.transform.PassContext(opt_level=CASE["opt_level"]):
                lib = finish_build(apply_passes(mod, CASE["passes"], target), target)
        if CASE.get("pipeline") == "call_tir":
            # As tvmfuzz found it: the PrimFunc called from a Relax main through R.call_tir,
            # built by relax.build and run on the Relax VM.
            ins, outs = CASE["call_tir"]["ins"], CASE["call_tir"]["outs"]
            with tvm.transform.PassContext(opt_level=CASE["opt_level"]):
                built = tvm.relax.build(call_tir_module(mod[CASE["name"]], CASE["name"], ins,
                                                        outs), target)
            vm = tvm.relax.VirtualMachine(built, tvm.cpu())
            res = vm["main"](*[tvm.runtime.tensor(inputs[n]) for n, _, _ in ins])
            res = [res] if len(outs) == 1 else list(res)
            got = dict(inputs)
            got.update({n: r.numpy() for (n, _, _), r in zip(outs, res)})
        else:
            if not CASE["passes"]:
                with tvm.transform.PassContext(opt_level=CASE["opt_level"]):
                    lib = tvm.tirx.build(mod, target=target)
            args = [tvm.runtime.tensor(inputs[n]) for n in CASE["params"]]
            lib[CASE["name"]](*args)
            got = {n: a.numpy() for n, a in zip(CASE["params"], args)}
    except Exception as e:  # noqa: BLE001
        return judge_exception(e, expect)
    if expect["kind"] != "numeric":
        print("built and ran without the expected failure: " + expect["message"])
        return 0
    want = arrays(CASE["expected"])
    bad = mismatch(got, want)
    if bad is None and CASE.get("pipeline") != "call_tir":
        # A wrong result read from memory nobody wrote shows only with some contents there:
        # run again with glibc filling every fresh block (mallopt M_PERTURB; 0xff fills
        # zeros), as tvmfuzz's uninitialized-read check does.
        import ctypes
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            mallopt = None
        for fill in (0xFF, 0xA5, 0x3C) if mallopt is not None else ():
            mallopt(-6, fill)
            args = [tvm.runtime.tensor(inputs[n]) for n in CASE["params"]]
            lib[CASE["name"]](*args)
            bad = mismatch({n: a.numpy() for n, a in zip(CASE["params"], args)}, want)
            if bad is not None:
                bad += f" (fresh memory filled under M_PERTURB {fill:#x})"
                break
        if bad is None:
            # A local (on the stack, out of malloc's reach) read before it is written: fill
            # the stack where the kernel's locals will be, then run it, for each value.
            paint = stack_painter()
            for value in STACK_FILLS:
                args = [tvm.runtime.tensor(inputs[n]) for n in CASE["params"]]
                paint(value, lib[CASE["name"]], args)
                bad = mismatch({n: a.numpy() for n, a in zip(CASE["params"], args)}, want)
                if bad is not None:
                    bad += (f" (the stack filled with {value} just before the kernel: it "
                            "reads memory nobody wrote)")
                    break
    if bad is not None:
        print("REPRODUCED: " + bad)
        return 1
    print("results agree with the reference: not reproduced")
    return 0


def mismatch(got, want):
    for n, w in want.items():
        rtol, atol = CASE["tol"].get(n, [1e-4, 1e-4])
        if not np.allclose(got[n].astype("float64"), w.astype("float64"), rtol=rtol, atol=atol,
                           equal_nan=True):
            bad = np.argwhere(~np.isclose(got[n].astype("float64"), w.astype("float64"),
                                          rtol=rtol, atol=atol, equal_nan=True))[0]
            return f"{n}{list(bad)} got {got[n][tuple(bad)]} want {w[tuple(bad)]}"
    return None


if __name__ == "__main__":
    sys.exit(main())
'''


def _npz(arrays: dict) -> str:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return base64.b64encode(zlib.compress(buf.getvalue(), 9)).decode()


def tir_repro_text(prog, script: str, outcome: Outcome, variant: Optional[dict] = None,
                   trace: Optional[str] = None) -> str:
    """``trace``: worker.tir_schedule.case_trace(prog), computed in the sandbox (it runs
    TVM)."""
    from importlib import metadata

    from fuzz.tir import reference as TR
    from worker.tir_passes import full_order

    variant = variant or outcome.extra.get("variant") or {}
    target = dict(variant.get("target") or {"kind": "llvm"})   # a dict: 0.27 refuses CLI strings
    inputs = TR.make_inputs(prog, prog.meta.get("seed") or 0)
    case = {"name": prog.name, "params": [p.name for p in prog.params], "target": target,
            "passes": full_order(list(variant.get("passes") or [])), "inputs": _npz(inputs),
            "pipeline": variant.get("pipeline", "tir"),
            "expect": {k: getattr(outcome, k) for k in ("kind", "stage", "message", "signature")}}
    case["schedule"] = trace or ""
    case["opt_level"] = int(target.get("opt-level", 3))
    if case["pipeline"] == "call_tir":
        from worker.tir_execute import _call_tir_params

        ins, outs = _call_tir_params(prog, list(prog.meta.get("outputs") or []))
        case["call_tir"] = {"ins": ins, "outs": outs}
    if outcome.kind == "numeric":
        want = TR.run(prog, {k: a.copy() for k, a in inputs.items()})
        case["expected"] = _npz(want)
        case["tol"] = {p.name: list(TR.tolerance(prog, p.name)) for p in prog.params}
    try:
        ver = metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        ver = ""
    title = ("Reproducer: " + outcome.signature).replace('"""', "'''")[:300]
    from fuzz.tir.render import SCRIPT_HEADER

    text = script.removeprefix(SCRIPT_HEADER)
    import inspect

    from worker import tir_passes as TP
    from worker import uninit
    from worker.tir_execute import call_tir_module

    head = HEADER.format(title=title, pip=f"apache-tvm=={ver} numpy" if ver else "apache-tvm numpy",
                         script=repr(text), case=repr(json.dumps(case)))
    # The worker's own R.call_tir wrapper, pass resolution, target binding, finishing
    # build and stack painter, verbatim: the repro builds and runs what the finding did.
    own = "\n\n\n".join(
        ["import ast, re   # the pass names' parser and its constants",
         f"_NAME = {TP._NAME!r}", f"ALIASES = {TP.ALIASES!r}",
         f"STACK_FILLS = {uninit.STACK_FILLS!r}"]
        + [inspect.getsource(o).rstrip() for o in (call_tir_module, TP._literal,
                                                    TP.PassMissing, TP.resolve_pass,
                                                    TP.apply_passes, TP.finish_build,
                                                    uninit.stack_painter)])
    return head.replace("\n\ndef arrays(blob):", "\n\n" + own + "\n\n\ndef arrays(blob):",
                        1) + BODY
