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

import re
import time

import numpy as np

from . import breadcrumb
from .execute import Outcome, _fail, _tensor, _variants, finish, gpu_thread, judge_module
from .script_inputs import (NoEntry, NoInputs, entry_function, input_values, output_arrays,
                            vm_arguments)
from .variants import Variant


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
    """What TVMScript text gives the judge: inputs made from the entry function's parameter
    types (``worker.script_inputs``; ``by_name`` for parameters whose type does not say), no
    reference, and fixed tolerances for the comparison across variants. ``entry``: the
    function the user named; the one the VM runs is chosen when the inputs are made
    (``script_inputs.entry_function``: ``entry``, else main, else the only public one), so a
    build that fails is a finding whichever function would have run."""

    has_reference = False

    def __init__(self, mod, input_seed: int = 0, by_name: dict | None = None,
                 entry: str | None = None):
        self.mod, self.seed, self.by_name, self.asked = mod, input_seed, by_name, entry
        self.entry = entry or "main"

    def make(self) -> list:
        self.entry = entry_function(self.mod, self.asked)
        return input_values(self.mod[self.entry], self.seed, self.by_name)

    def refused(self, e: BaseException, stage: str = "inputs") -> Outcome:
        """tvmfuzz could not make the entry's arguments (stage ``inputs``) or read its result
        (stage ``outputs``): tvmfuzz's limit, never a finding."""
        if stage == "outputs":
            return _fail("outputs", e, "unsupported_output", "invalid")
        if isinstance(e, NoEntry):
            return Outcome("invalid", "no_entry", "inputs", "NoEntry", str(e))
        if isinstance(e, NoInputs):
            return Outcome("invalid", "no_inputs", "inputs", "NoInputs", str(e))
        return _fail("inputs", e, "no_inputs", "invalid")

    def vm_args(self, values: list, v: Variant) -> list:
        return vm_arguments(values, lambda a: _tensor(a, v))

    def outputs(self, out) -> list:
        return output_arrays(out)

    def reference(self, args: list) -> list:
        raise NotImplementedError("TVMScript text has no reference")

    def differs(self, expected: list, actual: list):
        text = _differs(expected, actual)
        return (int(text.split()[1].rstrip(":")) if text.startswith("output ") else 0,
                text) if text else None

    def numeric_key(self, index: int) -> str:
        return ""

    def exact(self, v: Variant) -> bool:
        """DecomposeOpsForInference turns an op in training mode (batch_norm's ``training``)
        into the inference one by design: that variant's results are not compared (its
        crashes still are findings), as ``ProgramInputs`` does for a program model."""
        if "DecomposeOpsForInference" not in v.passes:
            return True
        if not hasattr(self, "_training"):
            self._training = _training_mode(self.mod)
        return not self._training


def _training_mode(mod) -> bool:
    """Does some call in a Relax function of ``mod`` run in training mode?"""
    import tvm

    for f in mod.functions.values():
        if not isinstance(f, tvm.relax.Function):
            continue
        for blk in getattr(f.body, "blocks", []):
            for b in blk.bindings:
                attrs = getattr(b.value, "attrs", None) \
                    if isinstance(b.value, tvm.relax.Call) else None
                if attrs is not None and bool(getattr(attrs, "training", False)):
                    return True
    return False


def external_calls(mod) -> list[str]:
    """The packed functions ``mod`` calls by name (``R.call_packed``, ``R.call_dps_packed``,
    ``R.call_pure_packed``, any ``relax.ExternFunc``; ``T.call_packed`` in a PrimFunc) that
    neither this TVM build registers (``tvm.get_global_func``) nor the module defines."""
    import tvm

    own = set()
    for gv, f in mod.functions.items():
        own.add(getattr(gv, "name_hint", None) or getattr(gv, "name", ""))
        if f.attrs is not None and "global_symbol" in f.attrs:
            own.add(str(f.attrs["global_symbol"]))
    return sorted(n for n in _called_names(mod) - own
                  if tvm.get_global_func(n, allow_missing=True) is None)


def _called_names(mod, c_externs: bool = False) -> set:
    """Every function name the module calls by string: packed functions and, with
    ``c_externs``, the C functions PrimFuncs call with ``T.call_extern``."""
    from tvm import relax

    names: set = set()

    def visit(e):
        if isinstance(e, relax.ExternFunc):
            names.add(str(e.global_symbol))

    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
        else:   # a PrimFunc: TVM 0.27 exposes no TIR visitor to Python; its printout says
            text = f.script()
            names.update(_TIR_PACKED.findall(text))
            if c_externs:
                names.update(_TIR_EXTERN.findall(text))
    return names


_TIR_PACKED = re.compile(r"\bT\.(?:tvm_)?call_c?packed(?:_lowered)?\(\s*\"([^\"]+)\"")
_TIR_EXTERN = re.compile(r"\bT\.call_extern\(\s*\"[^\"]*\",\s*\"([^\"]+)\"")
# How the VM and the runtime word a function they cannot find (vm_load, run).
_NOT_FOUND = re.compile(r"cannot find|can't find|not found|undefined symbol|not registered",
                        re.I)


_DTENSOR = re.compile(r"\bR\.DTensor\(|\bR\.dist\.")
_CPU_KINDS = ("llvm", "c")


def device_mismatch(mod, variants: list) -> str:
    """Why ``mod`` cannot run on what ``variants`` build ("" when it can): a virtual device of
    another target kind or with an index above 0 (the VM gets one device per kind), or a
    PrimFunc bound to GPU threads where every variant builds for the CPU."""
    import tvm

    tirx = getattr(tvm, "tirx", None) or tvm.tir   # 0.27 / before
    kinds = {v.kind for v in variants}
    some_cpu, all_cpu = (f(k in _CPU_KINDS for k in kinds) for f in (any, all))
    infos = mod.global_infos if mod.global_infos is not None else {}
    for vd in (infos["vdevice"] if "vdevice" in infos else []):
        kind, index = vd.target.kind.name, int(vd.vdevice_id)
        if index != 0:
            return f"the module places values on device {kind}:{index}; tvmfuzz runs the VM " \
                   "with device 0 only"
        if not (kind in kinds or (kind in _CPU_KINDS and some_cpu)):
            return f"the module places values on a {kind} device; the build is for " \
                   + ", ".join(sorted(kinds))
    if all_cpu:
        for gv, f in mod.functions.items():
            if isinstance(f, tirx.PrimFunc):
                thread = gpu_thread(f.script())
                if thread:
                    name = getattr(gv, "name_hint", None) or getattr(gv, "name", "")
                    return f"PrimFunc {name} binds loops to GPU threads ({thread}): it is " \
                           f"written for a GPU; the build is for " + ", ".join(sorted(kinds))
    return ""


_COLLECTIVE = re.compile(r"\bR\.ccl\.")
# How a run refuses arguments that do not fit what a function declared (the VM's match_cast
# and shape checks, a PrimFunc's argument checks).
_ARG_REFUSED = re.compile(r"match_cast error|ErrorContext\(match_cast|Mismatched [\w.]+ on "
                          r"argument|Argument [\w.]+ has an unsatisfied constraint")


def _input_refused(mod, inputs: "TextInputs", o: Outcome) -> str:
    """Why a run failure is the module refusing tvmfuzz's inputs, not TVM failing ("" when
    it is not): the module's own ``R.assert_op`` failing on inputs drawn at random, or an
    argument check failing where tvmfuzz guessed a parameter's shape (its type gives only an
    ndim or nothing, and no match_cast says more)."""
    if (o.verdict, o.kind, o.stage) != ("fail", "crash", "run"):
        return ""
    said = f"{o.message}\n{o.detail}"
    if o.error_type == "AssertionError" and _calls_op(mod, "relax.assert_op"):
        return f"the module's own R.assert_op refuses tvmfuzz's random inputs: {o.message}"
    guessed = _guessed(mod[inputs.entry], inputs.by_name)
    if guessed and _ARG_REFUSED.search(said):
        return (f"the module refuses the shape tvmfuzz guessed for {', '.join(guessed)} "
                f"(its type gives no shape): {o.message}")
    return ""


def _calls_op(mod, name: str) -> bool:
    from tvm import relax

    found = []

    def visit(e):
        if isinstance(e, relax.Call) and getattr(e.op, "name", "") == name:
            found.append(e)

    for f in mod.functions.values():
        if isinstance(f, relax.Function):
            relax.analysis.post_order_visit(f, visit)
    return bool(found)


def _guessed(func, by_name) -> list[str]:
    """Parameters of ``func`` whose input shape tvmfuzz chose at random: tensors (also inside
    tuples) typed with an ndim or no shape, which no match_cast of the parameter fixes."""
    cast = set()
    for block in getattr(func.body, "blocks", []):
        for b in block.bindings:
            if type(b).__name__ == "MatchCast":
                cast.update(p for p in func.params if b.value.same_as(p))

    def hides(ty) -> bool:
        if hasattr(ty, "fields"):
            return any(hides(f) for f in ty.fields)
        return hasattr(ty, "shape") and hasattr(ty, "ndim") and not hasattr(ty, "values") \
            and ty.shape is None

    out = []
    for p in func.params:
        name = getattr(p, "name", None) or getattr(p, "name_hint", "")
        ty = getattr(p, "ty", None)
        ty = ty if ty is not None else p.struct_info
        if hides(ty) and p not in cast and name not in (by_name or {}):
            out.append(name)
    return out


def needs_external(names: list[str]) -> Outcome:
    return Outcome("invalid", "needs_external", "externals", "", "the module calls packed "
                   f"function{'s' if len(names) > 1 else ''} {', '.join(names)}, which this "
                   "TVM build does not provide")


def judge_script(text: str, variants: list, input_seed: int = 0,
                 near_valid: bool = False, by_name: dict | None = None,
                 entry: str | None = None) -> Outcome:
    """``entry``: the Relax function to run (None: ``main``, else the only public one)."""
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
    if entry:
        try:   # a name the module lacks: said before anything is built
            entry_function(mod, entry)
        except NoEntry as e:
            return finish(Outcome("invalid", "no_entry", "parse", "NoEntry", str(e)), t0,
                          variants[0], [])
    missing = external_calls(mod)
    if missing:
        # A function some other build or application registers: not TVM's failure here.
        return finish(needs_external(missing), t0, variants[0], [])
    why = device_mismatch(mod, variants)
    if why:
        # Written for a device the variants do not build for (a GPU kernel, a second
        # device): tvmfuzz runs the VM with one device of the variant's kind.
        return finish(Outcome("invalid", "needs_device", "parse", "", why), t0, variants[0], [])
    if _DTENSOR.search(text):
        return finish(Outcome("invalid", "unsupported_input", "parse", "", "the module uses "
                              "distributed tensors (R.DTensor); tvmfuzz builds single-device "
                              "modules with relax.build, which does not lower them"),
                      t0, variants[0], [])
    if _COLLECTIVE.search(text):
        return finish(Outcome("invalid", "needs_device", "parse", "", "the module calls "
                              "collective communication (R.ccl), which runs only in a disco "
                              "session of several workers"), t0, variants[0], [])
    inputs = TextInputs(mod, input_seed, by_name, entry)
    o = judge_module(mod, inputs, variants, near_valid, t0=t0)
    why = _input_refused(mod, inputs, o)
    if why:
        return finish(Outcome("invalid", "input_rejected", "run", o.error_type, why,
                              o.throw_site, o.detail), t0, variants[0], [])
    said = f"{o.message}\n{o.detail}"
    if o.verdict == "fail" and o.stage in ("build", "vm_load", "run") \
            and _NOT_FOUND.search(said):
        # Defensive: a function called by name that the check above let through (an extern
        # a PrimFunc calls, say) and that the VM or linker then cannot find.
        named = sorted(n for n in _called_names(mod, c_externs=True)
                       if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", said))
        if named:
            return finish(needs_external(named), t0, variants[0], [])
    return o

