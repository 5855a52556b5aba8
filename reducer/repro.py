"""repro.py: a standalone reproducer that needs only ``pip install apache-tvm==X numpy``.

It embeds the reduced TVMScript and what the finding did with it (compile variants, the
inputs' recipe, the expected failure) and replays that without tvmfuzz; see
``repro_template.py`` for the script itself.
"""
from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import zlib
from importlib import metadata
from pathlib import Path
from typing import Optional

from fuzz.model import Program
from fuzz.outcome import Outcome

TEMPLATE = Path(__file__).with_name("repro_template.py")


_PKGS = ("apache-tvm", "apache-tvm-ffi", "numpy", "ml_dtypes")


def versions(python: Optional[str] = None) -> dict:
    """Package versions of this interpreter, or of ``python`` (another TVM install, e.g. an
    env of `tvmfuzz env add`) when given."""
    import sys

    if python and os.path.abspath(python) != os.path.abspath(sys.executable):
        return dict(_versions_of(python))
    out = {}
    for pkg in _PKGS:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = ""
    return out


@functools.lru_cache(maxsize=8)
def _versions_of(python: str) -> tuple:
    import subprocess

    code = ("import json\nfrom importlib import metadata\nout = {}\n"
            f"for p in {_PKGS!r}:\n"
            "    try:\n        out[p] = metadata.version(p)\n"
            "    except metadata.PackageNotFoundError:\n        out[p] = ''\n"
            "print(json.dumps(out))")
    try:
        r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        return tuple(json.loads(r.stdout.strip().splitlines()[-1]).items())
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return tuple((p, "") for p in _PKGS)


def _literal(text: str) -> str:
    """A Python literal for ``text`` that keeps it readable when it can."""
    if "'''" not in text and not text.endswith(("\\", "'")):
        return "r'''" + text + "'''"
    return repr(text)


def failing_variants(program: Optional[Program], outcome: Outcome) -> list[dict]:
    """The variants the finding was built with, up to the one that failed."""
    from worker.variants import Variant

    failing = outcome.extra.get("variant")
    vs = [Variant.from_json(v).to_json()   # as the worker spells them: comparable
          for v in (program.meta.get("variants") if program else None) or []]
    failing = Variant.from_json(failing).to_json() if failing else failing
    if failing in vs:
        return vs[:vs.index(failing) + 1]
    if failing:
        return [failing]
    return vs or [{"target": {"kind": "llvm"}, "pipeline": "default", "passes": [],
                   "exec_mode": "bytecode"}]


def pack(arrays) -> str:
    """Arrays as base64 of a zlib-compressed .npz (repro.py's ``unpack``). .npz keeps only
    numpy's own dtypes, so ml_dtypes' (bfloat16, float8) are stored as their bits, with every
    array's dtype name under "dtypes"."""
    import numpy as np

    arrays = [np.asarray(a) for a in arrays]
    stored = [a if a.dtype.kind in "biufc" else a.view(f"uint{8 * a.dtype.itemsize}")
              for a in arrays]
    buf = io.BytesIO()
    np.savez(buf, *stored, dtypes=np.array([str(a.dtype) for a in arrays]))
    return base64.b64encode(zlib.compress(buf.getvalue(), 9)).decode()


def case_inputs(program: Program) -> dict:
    """The finding's own inputs (``fuzz.inputs.make_inputs`` of the case's seed, the call the
    worker makes), as arrays."""
    from fuzz.inputs import make_inputs

    _, args = make_inputs(program, program.meta.get("seed") or 0)
    return {"how": "arrays", "data": pack(args)}


def _expected(program: Program) -> str:
    """Numpy's outputs for the case (numeric findings against the reference)."""
    from fuzz import reference
    from fuzz.inputs import make_inputs

    env, args = make_inputs(program, program.meta.get("seed") or 0)
    return pack(reference.flatten(reference.run(program, args, env)))


def _tolerances(program: Optional[Program]) -> dict:
    from fuzz.catalogue.spec import FLOATS

    if program is None:   # a TVMScript file: the script judge's tolerances
        return {"float16": [1e-2, 1e-2], "bfloat16": [1e-2, 1e-2], "float32": [1e-4, 1e-4],
                "float64": [1e-4, 1e-4]}
    from fuzz import reference

    return {d: list(reference.tolerance(program, d)) for d in FLOATS}


def shared_code() -> str:
    """The worker's own code a repro.py runs, as its source (``inspect.getsource``): how a
    variant is built (worker.variants), the pass watch and the round-trip check
    (worker.execute, fuzz.materialize), the schedule replay (worker.schedule_trace) and the
    inputs of a TVMScript file (worker.script_inputs). One copy: what the reproducer runs is
    what the finding ran."""
    import inspect
    import textwrap

    from fuzz import materialize as M
    from worker import execute, schedule_trace, script_inputs, variants

    # The pass watch tells the sandbox where a child died (worker/breadcrumb.py); a repro.py
    # runs alone, so that call does nothing there.
    parts = ["import re   # the worker's constants include compiled patterns",
             "class breadcrumb:   # tvmfuzz's crash locator (worker/breadcrumb.py): a no-op here\n"
             "    @staticmethod\n    def mark(**where):\n        pass"]
    for module, objs, consts in (
            (variants, variants.REPRO_CODE, variants.REPRO_CONSTANTS),
            (schedule_trace, schedule_trace.REPRO_CODE, ()),
            (execute, execute.REPRO_CODE, execute.REPRO_CONSTANTS),
            (M, (M.to_script, M.from_script), ()),
            (script_inputs, script_inputs.REPRO_CODE, ())):
        parts.append(f"# --- from tvmfuzz's {module.__name__}, as it is "
                     + "-" * max(0, 60 - len(module.__name__)))
        parts += [f"{name} = {getattr(module, name)!r}" for name in consts]
        parts += [textwrap.dedent(inspect.getsource(o)).rstrip() for o in objs]
    return "\n\n\n".join(parts) + "\n\n"


def _variants_for_case(variants: list, outcome: Outcome, traces: Optional[dict]) -> list:
    """The variants as repro.py builds them: a "scheduled" one carries the schedule tvmfuzz
    applied, as TVM's trace per step (or why it is missing); one whose results are not
    comparable (a numerics-changing pass or schedule primitive) says so."""
    from worker import tir_schedule as TS
    from worker.variants import Variant

    out = []
    steps = outcome.extra.get("schedule") or []
    for i, v in enumerate(variants):
        v = dict(v)
        exact = Variant.from_json(v).exact
        if v.get("pipeline") == "scheduled":
            got = (traces or {}).get(str(i)) or {}
            if got.get("traces") is not None:
                v["schedule_trace"] = got["traces"]
            else:
                v["schedule_missing"] = got.get("error") or "no trace was taken"
            exact = exact and TS.is_exact(steps)
        if not exact:
            v["inexact"] = True
        out.append(v)
    return out


def repro_text(script: str, outcome: Outcome, program: Optional[Program] = None,
               variants: Optional[list] = None, input_seed: int = 0,
               timeout: float = 60.0, near_valid: bool = False,
               inputs_by_name: Optional[dict] = None, module_json: str = "",
               schedule_traces: Optional[dict] = None, builder: bool = False,
               onnx: Optional[dict] = None, entry: Optional[str] = None,
               torch: Optional[dict] = None) -> str:
    """repro.py's text. ``module_json``: ``tvm.ir.save_json`` of the module the finding built,
    where ``script`` does not parse back to it; ``schedule_traces``: per index of a
    "scheduled" variant, ``{"traces": ...}`` (``worker.tir_schedule.step_traces``) or
    ``{"error": why}``. ``builder``: ``script`` is the module's construction as Python
    (``fuzz.materialize.builder_source``), for a finding TVM meets while constructing it.
    ``onnx``: an ONNX finding (``onnx_repro_text``): ``script`` builds the model with
    onnx.helper, ``onnx`` holds the graph inputs' names and values and the import options.
    ``torch``: a PyTorch finding (``torch_repro_text``): ``script`` is the nn.Module's
    source, ``torch`` holds forward's inputs' names and values and the export and import
    options.
    ``entry``: the Relax function the user chose (``--entry``; None: repro.py chooses as
    tvmfuzz did, ``script_inputs.entry_function``)."""
    v = versions()
    inputs = {"how": "script", "seed": input_seed, "by_name": inputs_by_name or {}}
    if program is not None:
        try:
            inputs = case_inputs(program)
        except Exception:  # noqa: BLE001 - then from the parameters' types, as for a script
            inputs = {"how": "script", "seed": program.meta.get("seed") or 0, "by_name": {}}
    case = {
        "kind": outcome.kind,
        "near_valid": near_valid or bool(program and program.meta.get("mode") == "near-valid"),
        "variants": _variants_for_case(variants or failing_variants(program, outcome), outcome,
                                       schedule_traces),
        "inputs": inputs,
        "expect": {k: getattr(outcome, k) for k in ("stage", "error_type", "message",
                                                    "signature", "throw_site")},
        "timeout": timeout,
        "tol": _tolerances(program),
    }
    if builder:
        case["builder"] = True
    shared = shared_code()
    if onnx is not None:
        import inspect

        from worker.onnx_judge import REPRO_CODE as ONNX_CODE

        case["onnx"] = {"feeds": onnx["feeds"], "options": onnx["options"]}
        case["inputs"] = {"how": "arrays", "data": pack(onnx["arrays"])}
        shared += "\n\n".join(inspect.getsource(o).rstrip() for o in ONNX_CODE) + "\n\n\n"
    if torch is not None:
        import inspect

        from worker.onnx_judge import REPRO_CODE as ONNX_CODE
        from worker.torch_judge import REPRO_CODE as TORCH_CODE

        case["torch"] = {"inputs": torch["inputs"], "options": torch["options"]}
        case["inputs"] = {"how": "arrays", "data": pack(torch["arrays"])}
        shared += "\n\n".join(inspect.getsource(o).rstrip()
                              for o in ONNX_CODE + TORCH_CODE) + "\n\n\n"
    if entry:
        case["entry"] = entry
    if module_json:
        case["module"] = base64.b64encode(zlib.compress(module_json.encode(), 9)).decode()
    extra = outcome.extra
    if program is not None and outcome.kind == "shape_inference" and extra.get("node"):
        func = extra.get("func") or program.entry
        try:
            n = program.func(func).node(extra["node"])
        except KeyError:   # an outcome of another program: no type to expect
            n = None
        if n is not None and n.ty is not None:
            case["expect_type"] = {"func": func, "binding": n.name, "op": n.op,
                                   "type": n.ty.to_json()}
    if program is not None and outcome.kind == "numeric" and "versus" not in extra:
        try:
            case["expected"] = _expected(program)
        except Exception:  # noqa: BLE001 - then only the cross-build comparison is left
            pass
    pip = f"apache-tvm=={v['apache-tvm']} numpy" if v["apache-tvm"] else "apache-tvm numpy"
    if "bfloat16" in script or "float8" in script:
        pip += " ml_dtypes"
    if onnx is not None:
        import onnx as onnx_pkg
        import onnxruntime

        pip += f" onnx=={onnx_pkg.__version__} onnxruntime=={onnxruntime.__version__}"
    if torch is not None:
        import torch as torch_pkg

        pip += f" torch=={torch_pkg.__version__.split('+')[0]}"
        if "bfloat16" in script:
            pip += " ml_dtypes"
    text = TEMPLATE.read_text()
    text = text[text.index("#!/usr/bin/env python3"):]
    title = outcome.signature.replace('"' * 3, "'" * 3).replace(chr(92), "/")[:300]
    fill = {"__TITLE__": f"Reproducer: {title}", "__PIP__": pip, "__SCRIPT__": _literal(script),
            "__CASE__": _literal(json.dumps(case, indent=1, default=str)),
            "__SHARED__": shared}
    # One pass, so text filled in is never scanned for another placeholder.
    return re.sub("|".join(fill), lambda m: fill[m.group(0)], text)


def onnx_repro_text(program: Program, outcome: Outcome,
                    variants: Optional[list] = None,
                    schedule_traces: Optional[dict] = None) -> str:
    """repro.py of an ONNX finding (``fuzz.model.OnnxProgram``): the model built with
    onnx.helper (``fuzz.onnx_export.model_source``), onnxruntime's outputs as the reference,
    TVM's import with the case's options, then the Relax reproducer's own build, run and
    comparison under the finding's variants."""
    from fuzz.inputs import make_inputs
    from fuzz.onnx_export import OnnxOptions, export, feeds, model_source

    opts = OnnxOptions.from_json(program.meta.get("onnx") or {})
    _, arrays = make_inputs(program, program.meta.get("seed") or 0)
    model = export(program, opts, arrays)
    fed = feeds(program, opts, arrays)
    return repro_text(model_source(model), outcome, program, variants,
                      schedule_traces=schedule_traces,
                      onnx={"feeds": list(fed), "arrays": list(fed.values()),
                            "options": opts.to_json()})


def torch_repro_text(program: Program, outcome: Outcome,
                     variants: Optional[list] = None,
                     schedule_traces: Optional[dict] = None) -> str:
    """repro.py of a PyTorch finding (``fuzz.model.TorchProgram``): the nn.Module's source
    (``fuzz.torch_export.full_source``), eager PyTorch's outputs as the reference,
    ``torch.export`` and TVM's import with the case's options, then the Relax reproducer's own
    build, run and comparison under the finding's variants."""
    from fuzz.inputs import make_inputs
    from fuzz.torch_export import TorchOptions, full_source, user_inputs

    opts = TorchOptions.from_json(program.meta.get("torch") or {})
    _, arrays = make_inputs(program, program.meta.get("seed") or 0)
    fed = user_inputs(program, opts, arrays)
    return repro_text(full_source(program, opts, arrays), outcome, program, variants,
                      schedule_traces=schedule_traces,
                      torch={"inputs": list(fed), "arrays": list(fed.values()),
                             "options": opts.to_json()})
