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


def failing_variants(program: Optional[Program], outcome: dict) -> list[dict]:
    """The variants the finding was built with, up to the one that failed."""
    failing = outcome.get("extra", {}).get("variant")
    vs = list((program.meta.get("variants") if program else None) or [])
    if failing in vs:
        return vs[:vs.index(failing) + 1]
    if failing:
        return [failing]
    return vs or [{"target": {"kind": "llvm"}, "pipeline": "default", "passes": [],
                   "exec_mode": "bytecode"}]


def case_inputs(program: Program) -> dict:
    """The recipe fuzz.inputs.make_inputs follows, with symbolic dims already bound."""
    from fuzz import dims as D
    from fuzz.inputs import bind_dims, make_inputs
    import numpy as np

    seed = program.meta.get("seed") or 0
    env, _ = make_inputs(program, seed)
    draws = len(bind_dims(program, np.random.default_rng(seed)))
    params = []
    for p in program.main.params:
        t = p.runtime_ty
        params.append([[D.evaluate(d, env) for d in t.shape], t.dtype, p.lo, p.hi])
    return {"how": "case", "seed": seed, "dim_draws": draws, "params": params}


def _expected(program: Program) -> tuple[str, dict]:
    """Numpy's outputs for the case (numeric findings against the reference)."""
    import numpy as np

    from fuzz import reference
    from fuzz.catalogue.spec import FLOATS
    from fuzz.inputs import make_inputs

    env, args = make_inputs(program, program.meta.get("seed") or 0)
    outs = reference.flatten(reference.run(program, args, env))
    buf = io.BytesIO()
    np.savez(buf, *[np.asarray(o) for o in outs])
    tol = {d: list(reference.tolerance(program, d)) for d in FLOATS}
    return base64.b64encode(zlib.compress(buf.getvalue(), 9)).decode(), tol


def repro_text(script: str, outcome: dict, program: Optional[Program] = None,
               variants: Optional[list] = None, input_seed: int = 0,
               timeout: float = 60.0, near_valid: bool = False,
               inputs_by_name: Optional[dict] = None) -> str:
    v = versions()
    case = {
        "kind": outcome.get("kind", ""),
        "near_valid": near_valid or bool(program and program.meta.get("mode") == "near-valid"),
        "variants": variants or failing_variants(program, outcome),
        "inputs": case_inputs(program) if program else {
            "how": "script", "seed": input_seed, "by_name": inputs_by_name or {}},
        "expect": {k: outcome.get(k, "") for k in ("stage", "error_type", "message",
                                                   "signature", "throw_site")},
        "timeout": timeout,
        "tol": {"float16": [1e-2, 1e-2], "bfloat16": [3e-2, 3e-2], "float32": [1e-4, 1e-5],
                "float64": [1e-7, 1e-9]},
    }
    extra = outcome.get("extra", {})
    if program is not None and outcome.get("kind") == "shape_inference" and extra.get("node"):
        func = extra.get("func") or program.entry
        try:
            n = program.func(func).node(extra["node"])
        except KeyError:   # an outcome of another program: no type to expect
            n = None
        if n is not None and n.ty is not None:
            case["expect_type"] = {"func": func, "binding": n.name, "op": n.op,
                                   "type": n.ty.to_json()}
    if program is not None and outcome.get("kind") == "numeric" \
            and "versus" not in outcome.get("extra", {}):
        try:
            case["expected"], case["tol"] = _expected(program)
        except Exception:  # noqa: BLE001 - then only the cross-build comparison is left
            pass
    pip = f"apache-tvm=={v['apache-tvm']} numpy" if v["apache-tvm"] else "apache-tvm numpy"
    if "bfloat16" in script:
        pip += " ml_dtypes"
    text = TEMPLATE.read_text()
    text = text[text.index("#!/usr/bin/env python3"):]
    title = outcome.get("signature", "").replace('"' * 3, "'" * 3).replace(chr(92), "/")[:300]
    fill = {"__TITLE__": f"Reproducer: {title}", "__PIP__": pip, "__SCRIPT__": _literal(script),
            "__CASE__": _literal(json.dumps(case, indent=1, default=str))}
    # One pass, so text filled in is never scanned for another placeholder.
    return re.sub("|".join(fill), lambda m: fill[m.group(0)], text)
