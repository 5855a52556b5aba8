"""What the frontend judges (``worker.onnx_judge``, ``worker.torch_judge``) share: exporting the
program model (a refusal is ``not_exportable``, an exporter's failure tvmfuzz's own), checking
the frontend's reference against numpy on the program (where they disagree the export is to
blame, not TVM), an importer's exception as a finding with its converter named, and the inputs
source of the judging loop, whose reference is the frontend's outputs. Sandbox child only."""
from __future__ import annotations

import re
from typing import Callable, Optional, Union

from fuzz import reference
from fuzz.inputs import make_inputs
from fuzz.model import Program
from fuzz.outcome import Outcome

from .execute import ProgramInputs, _fail


def export_case(program: Program, input_seed: int, export: Callable[[list], object],
                refusal: type) -> Union[tuple, Outcome]:
    """(env, arrays, what ``export(arrays)`` made) for the case's inputs; an ``invalid``
    Outcome where the exporter refuses the program (``refusal``: its NotExportable) or fails."""
    try:
        env, arrays = make_inputs(program, input_seed)
        return env, arrays, export(arrays)
    except refusal as e:
        return Outcome("invalid", "not_exportable", "export", "NotExportable", str(e))
    except Exception as e:  # noqa: BLE001 - the exporter's own defect
        return _fail("export", e, "tvmfuzz_error", "invalid")


def numpy_disagreement(program: Program, arrays: list, env: dict, expected: list,
                       kind: str, stage: str, who: str) -> Optional[Outcome]:
    """The frontend's outputs (``expected``, from ``who``) are the reference only where they
    agree with numpy on the program; elsewhere the export wrote another semantics (or ``who``
    errs) and TVM is not to blame: an ``invalid`` Outcome of ``kind``. None where they agree
    or numpy has no reference for the case (``who`` alone then)."""
    try:
        numpy_out = reference.flatten(reference.run(program, arrays, env))
    except Exception:  # noqa: BLE001 - no numpy reference for this case
        return None
    diff = reference.compare(program, numpy_out, expected)
    if diff:
        return Outcome("invalid", kind, stage, "", f"{who} disagrees with numpy: " + diff[1])
    return None


def import_crash(e: BaseException, converter_frame: Callable[[BaseException], object]
                 ) -> Outcome:
    """An importer's exception: a finding at stage ``import``, the converter that raised it
    (``converter_frame(e)``: its name, or (its name, the method's defining class's name) when
    it inherits the method: ONNX's Min and Max share ``MultiInputBase._impl_v1``, one
    defect there is one bug) in ``extra``."""
    conv = converter_frame(e)
    conv, root = conv if isinstance(conv, tuple) else (conv, conv)
    extra = {"converter": conv} if conv else {}
    if root and root != conv:
        extra["converter_root"] = root
    return _fail("import", e, extra=extra)


def type_finding(mod, problem: str) -> Outcome:
    """A declared output type the reference contradicts (``problem``, one line), at import.
    Where it is a dtype, the first op of the imported ``main`` that turned float operands of
    one dtype into another float dtype is named (``extra["dtype_op"]``): the bug key reads it,
    so one converter's fixed ``out_dtype`` (the PyTorch importer's matmul: float32 whatever the
    operands) is one bug whichever dtype met it."""
    extra = {}
    if "declared dtype" in problem:
        declared = re.search(r"declared dtype (\w+)", problem)
        op = dtype_changer(mod, declared.group(1) if declared else "")
        if op:
            extra["dtype_op"] = op
    elif "declared shape" in problem:
        op = negative_dim_maker(mod)
        if op:
            extra["negative_dim_op"] = op
    return Outcome("fail", "shape_inference", "import", "", problem, extra=extra)


def _main_calls(mod):
    """(binding var, call) of the relax op calls in ``mod["main"]``'s blocks, in order."""
    from tvm import relax

    try:
        blocks = mod["main"].body.blocks
    except Exception:  # noqa: BLE001 - a main that is no SeqExpr of blocks
        return
    for block in blocks:
        for b in block.bindings:
            call = getattr(b, "value", None)
            if isinstance(call, relax.Call) and hasattr(call.op, "name"):
                yield b.var, call


def _type(e):
    from fuzz import compat

    try:
        return compat.type_of(e)
    except Exception:  # noqa: BLE001 - an expression without a type
        return None


def negative_dim_maker(mod) -> Optional[str]:
    """The first op of ``mod["main"]`` whose declared result has a negative static dim (a
    slice's inference with negative steps: both importers reach it through strided_slice)."""
    for var, call in _main_calls(mod):
        dims = getattr(getattr(_type(var), "shape", None), "values", None) or []
        if any(getattr(d, "value", 0) < 0 for d in dims):
            return call.op.name
    return None


def dtype_changer(mod, declared: str = "") -> Optional[str]:
    """The first binding of ``mod["main"]`` whose op (not astype) makes a float result of a
    dtype other than its float operands', all of one dtype; else, where the wrong dtype
    ``declared`` is given, the first whose op makes a float result of that dtype from no
    tensor operand of it (ONNX OneHot's float32 values made float64 PrimValues: relax.one_hot
    declares float64, its tensor operand is int64); None where none does."""
    from fuzz import compat
    from tvm import relax

    def dtype(e):
        d = getattr(_type(e), "dtype", None)
        return str(d) if d is not None else ""

    calls = list(_main_calls(mod))
    for var, call in calls:
        if call.op.name == "relax.astype":
            continue
        out = dtype(var)
        ins = {dtype(a) for a in call.args if isinstance(a, relax.Expr)} - {""}
        if out.startswith(("float", "bfloat")) and len(ins) == 1 and out not in ins \
                and next(iter(ins)).startswith(("float", "bfloat")):
            return call.op.name
    if not declared.startswith(("float", "bfloat")):
        return None
    tensor = compat.tensor_type_class()
    for var, call in calls:
        if call.op.name == "relax.astype" or dtype(var) != declared:
            continue
        if not any(isinstance(_type(a), tensor) and dtype(a) == declared
                   for a in call.args if isinstance(a, relax.Expr)):
            return call.op.name
    return None


class ImportedInputs(ProgramInputs):
    """What a frontend case gives the judge: the program's inputs (``fuzz.inputs``, the same
    arrays the frontend's reference ran on) bound by name to the imported ``main``'s
    parameters (``make``, per frontend), the reference's outputs, the program's tolerances and
    numeric keys; the case's frontend options (``opts``) make its probe the same way."""

    def __init__(self, program: Program, input_seed: int, mod, by_name: dict, expected: list,
                 opts=None):
        super().__init__(program, input_seed)
        self.mod, self.by_name, self.expected, self.opts = mod, by_name, expected, opts
        self.has_reference = True

    def refused(self, e: BaseException, stage: str = "inputs") -> Outcome:
        return _fail(stage, e, "tvmfuzz_error", "invalid")

    def reference(self, args: list) -> list:
        return list(self.expected)

    def probe_module(self, prog: Program, args: list) -> Optional[tuple]:
        """The probe program taken through the case's own path (``import_probe``: exported
        with the case's options, the frontend's reference run on it, imported with the case's
        flags), so its first wrong value is judged on what the importer made, not on the
        program materialized. The values are numpy's where the frontend's reference agrees
        with numpy on every one of them (as the case's outputs had to); None where it does
        not (an export whose intermediate values mean something else: no name is better
        than a wrong one), or where the probe has no export or import (``import_probe``
        raises: ``_guilty_op`` then names nothing)."""
        env, arrays = make_inputs(self.program, self.seed)
        mod, main_args, theirs = self.import_probe(prog, arrays)
        ours = reference.flatten(reference.run(prog, arrays, env))
        if reference.compare(prog, ours, theirs) is not None:
            return None
        return mod, main_args, ours

    def import_probe(self, prog: Program, arrays: list) -> tuple:
        """(the imported module, its arguments, the frontend's reference values, flat) of
        the probe program ``prog`` on the case's inputs ``arrays``; per frontend."""
        raise NotImplementedError
