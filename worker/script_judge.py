"""Judge TVMScript text: parse it, then the one judging loop of a Relax module
(``worker.execute.judge_module``: verifier, each compile variant with the failing pass or
schedule step named, load, run, outputs compared across variants, print/parse round trip
last) with ``TextInputs``.

The judge of text for every consumer (``worker.cases``): a user's file replayed (one variant
for the target asked), reduced, reported or bisected, and the reducer's text candidates. No
numpy reference: the text has no program model, so only cross-variant differences count as
numeric. Sandbox child only.
"""
from __future__ import annotations

import time

import numpy as np

from . import breadcrumb
from .execute import Outcome, _fail, _tensor, _to_numpy, _variants, finish, judge_module
from .script_inputs import NoInputs, input_values, vm_arguments
from .variants import Variant


def _flat(x) -> list:
    return [y for i in x for y in _flat(i)] if isinstance(x, (list, tuple)) else [x]


def _differs(a: list, b: list) -> str:
    if len(a) != len(b):
        return f"{len(b)} outputs, expected {len(a)}"
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"output {i}: shape {y.shape}, expected {x.shape}"
        if x.dtype.kind == "f" or "bfloat16" in str(x.dtype):
            tol = 1e-2 if x.dtype.itemsize <= 2 else 1e-4
            if not np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True):
                return f"output {i} ({x.dtype}) differs"
        elif not np.array_equal(x, y):
            return f"output {i} ({x.dtype}) differs"
    return ""


class TextInputs:
    """What TVMScript text gives the judge: inputs made from ``main``'s parameter types
    (``worker.script_inputs``; ``by_name`` for parameters whose type does not say), no
    reference, and fixed tolerances for the comparison across variants."""

    entry, has_reference = "main", False

    def __init__(self, mod, input_seed: int = 0, by_name: dict | None = None):
        self.mod, self.seed, self.by_name = mod, input_seed, by_name

    def make(self) -> list:
        return input_values(self.mod["main"], self.seed, self.by_name)

    def refused(self, e: BaseException) -> Outcome:
        if isinstance(e, NoInputs):
            return Outcome("invalid", "no_inputs", "inputs", "NoInputs", str(e))
        return _fail("inputs", e, "no_inputs", "invalid")

    def vm_args(self, values: list, v: Variant) -> list:
        return vm_arguments(values, lambda a: _tensor(a, v))

    def outputs(self, out) -> list:
        return _flat(_to_numpy(out))

    def reference(self, args: list) -> list:
        raise NotImplementedError("TVMScript text has no reference")

    def differs(self, expected: list, actual: list):
        text = _differs(expected, actual)
        return (int(text.split()[1].rstrip(":")) if text.startswith("output ") else 0,
                text) if text else None

    def numeric_key(self, index: int) -> str:
        return ""

    def exact(self, v: Variant) -> bool:
        return True   # no program model to say otherwise: the variant alone decides


def judge_script(text: str, variants: list, input_seed: int = 0,
                 near_valid: bool = False, by_name: dict | None = None) -> Outcome:
    import tvm

    variants = _variants(variants or [{}])
    t0 = time.perf_counter()
    breadcrumb.mark(stage="parse")
    try:
        # A near-valid module is ill-formed on purpose: the parser must not refuse it.
        mod = tvm.script.from_source(text, check_well_formed=not near_valid)
    except Exception as e:  # noqa: BLE001
        return finish(_fail("parse", e, kind="not_tvmscript", verdict="invalid"), t0,
                      variants[0], [])
    if not isinstance(mod, tvm.IRModule) or not any(
            isinstance(f, tvm.relax.Function) for f in mod.functions.values()):
        # tvmfuzz's own limit, never TVM's failure: user modules are judged through a Relax
        # entry function (a PrimFunc alone can be called from one with R.call_tir).
        return finish(Outcome("invalid", "unsupported_input", "parse", "", "tvmfuzz judges "
                              "modules with a Relax function; this one has only PrimFuncs"),
                      t0, variants[0], [])
    return judge_module(mod, TextInputs(mod, input_seed, by_name), variants, near_valid, t0=t0)
