"""Judge an ONNX case (``fuzz.model.OnnxProgram``, kind ``onnx``): export the program model
to ONNX (``fuzz.onnx_export``), run it in onnxruntime, import it with TVM's frontend
(``tvm.relax.frontend.onnx.from_onnx``), check the imported module's declared output types
against what onnxruntime produced, then the one judging loop of a Relax module
(``worker.execute.judge_module``) with ``OnnxInputs``, whose reference is onnxruntime's
outputs. Sandbox child only.

Stages and verdicts of their own:

| stage | what fails | verdict, kind |
|---|---|---|
| ``export`` | the case has no ONNX form at its opset | ``invalid``, ``not_exportable`` |
| ``onnxruntime`` | onnxruntime refuses the model or fails running it | ``invalid``, ``onnx_rejected`` |
| ``onnxruntime`` | its outputs differ from numpy's on the program (the export's fault) | ``invalid``, ``onnx_disagrees`` |
| ``import`` | ``from_onnx`` raises | ``fail``, ``crash`` (the converter in ``extra``) |
| ``import`` | ``from_onnx`` raises on mixed dtypes, an earlier converter declared a wrong one | ``fail``, ``crash`` (``extra["dtype_op"]``: keyed as that dtype finding) |
| ``import`` | a declared output shape or dtype is not what onnxruntime computed | ``fail``, ``shape_inference`` |
"""
from __future__ import annotations

import re
import time
import warnings
from typing import Optional

import numpy as np

from fuzz import dims as D
from fuzz.inputs import make_inputs
from fuzz.model import Program
from fuzz.outcome import Outcome

from . import breadcrumb
from .execute import _fail, _variants, finish, judge_module
from .frontend import (ImportedInputs, export_case, import_crash, numpy_disagreement,
                       type_finding)

# An importer's refusal of operands of mixed dtypes: a binary op's, concat's, stack's,
# where's... inference ("Binary operators must have the same datatype for both operands",
# "... requires all tensors to have the same dtype", "dtype mismatch").
_MIXED_DTYPES = re.compile(r"same (?:data ?type|dtype)|(?:data ?type|dtype)s? (?:mismatch|differ)"
                           r"|mismatch(?:ed)? (?:data ?type|dtype)", re.IGNORECASE)


def onnxruntime_outputs(model, feeds: dict) -> list:
    """onnxruntime's outputs of ``model`` (CPU), as numpy arrays."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)   # its refusals are verdicts, not log lines
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return [np.asarray(x) for x in sess.run(None, feeds)]


def import_model(model, program: Program, opts, arrays: list):
    """TVM's import of ``model`` with the case's options (its checker's warnings muted)."""
    from tvm.relax.frontend.onnx import from_onnx

    from fuzz.onnx_export import feeds

    shape_dict = ({k: list(np.shape(v)) for k, v in feeds(program, opts, arrays).items()}
                  if opts.shape_dict else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_onnx(model, shape_dict=shape_dict,
                         keep_params_in_input=bool(opts.keep_params_in_input))


def imported_module(program: Program, input_seed: int = 0):
    """The module TVM imports from ``program``'s ONNX model (for printing a finding)."""
    from fuzz.onnx_export import OnnxOptions, export

    opts = OnnxOptions.from_json(program.meta.get("onnx") or {})
    _, arrays = make_inputs(program, input_seed)
    return import_model(export(program, opts, arrays), program, opts, arrays)


def converter_frame(exc: BaseException):
    """The frontend converter an import error came from (``Squeeze._impl_v13``): the
    innermost ``_impl_vN`` frame in onnx_frontend.py, or where the error came from normalizing
    what a converter returned (a Relax op's type inference), the converter that
    ``_convert_operator`` ran, or where ``_construct_nodes`` refused the node before, its
    converter; "" where none is on the traceback. A converter running a method it inherits
    gives (its name, the method's qualified name: ``MultiInputBase._impl_v1``)."""
    found, root = "", ""
    tb = exc.__traceback__
    while tb is not None:
        frame, code = tb.tb_frame, tb.tb_frame.f_code
        if code.co_filename.endswith("onnx_frontend.py"):
            if code.co_name.startswith("_impl_v"):
                cls = frame.f_locals.get("cls")
                found = f"{getattr(cls, '__name__', '?')}.{code.co_name}"
                root = getattr(code, "co_qualname", found)   # Python 3.11+
            elif code.co_name == "_convert_operator" and not found:
                found = _converter_of(frame.f_locals.get("op_name"), frame.f_locals.get("opset"))
            elif code.co_name == "_construct_nodes" and frame.f_locals.get("op_name"):
                # refused before its converter ran (ShapeExpr inputs): the node's converter
                importer = frame.f_locals.get("self")
                found = _converter_of(frame.f_locals["op_name"], getattr(importer, "opset", 0))
        tb = tb.tb_next
    return (found, root) if root and root != found else found


def _converter_of(op_name, opset) -> str:
    try:
        from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

        cls = _get_convert_map()[op_name]
        return f"{cls.__name__}.{cls.get_converter(opset).__name__}"
    except Exception:  # noqa: BLE001 - an op without a converter, another frontend layout
        return str(op_name or "")


def output_type_problem(ret, expected: list, dim_value,
                        ref: str = "onnxruntime") -> Optional[str]:
    """Where a declared return type (``ret``: TVM's type of the imported ``main``'s result)
    disagrees with the reference's outputs (``ref``: onnxruntime's, eager PyTorch's; count,
    dtype, rank, dims; ``dim_value(d)`` gives a dim's value, None where it cannot tell): one
    line, or None. Uses only TVM's objects' attributes, so an ONNX or PyTorch repro.py runs
    this very function (reducer/repro.py)."""
    fields = list(ret.fields) if hasattr(ret, "fields") else [ret]
    if len(fields) != len(expected):
        return f"main returns {len(fields)} values, {ref} {len(expected)}"
    for i, (t, e) in enumerate(zip(fields, expected)):
        if not hasattr(t, "ndim") or not hasattr(t, "dtype"):
            continue
        dtype = "" if t.dtype is None else str(t.dtype)
        if dtype and dtype != str(e.dtype):
            return f"output {i}: declared dtype {dtype}, {ref} gives {e.dtype}"
        if int(t.ndim) >= 0 and int(t.ndim) != e.ndim:
            return f"output {i}: declared rank {int(t.ndim)}, {ref} gives shape {e.shape}"
        dims = getattr(getattr(t, "shape", None), "values", None)
        for j, d in enumerate(dims or []):
            v = dim_value(d)
            if v is not None and v != e.shape[j]:
                return (f"output {i}: declared shape {[str(x) for x in dims]}, {ref} "
                        f"gives {list(e.shape)}")
    return None


def declared_output_problem(mod, expected: list, env: dict) -> Optional[str]:
    """``output_type_problem`` of the imported ``main``; symbolic dims evaluated with the
    inputs' dims (``env``: dim_param -> value)."""
    from fuzz import compat
    from fuzz.materialize import _prim_to_dim

    def dim_value(d):
        try:
            return D.evaluate(_prim_to_dim(d), env)
        except Exception:  # noqa: BLE001 - an expression tvmfuzz cannot evaluate
            return None

    return output_type_problem(compat.ret_type(mod["main"]), expected, dim_value)


# Written into an ONNX repro.py as it is (reducer/repro.py).
REPRO_CODE = (output_type_problem,)


def main_args(mod, by_name: dict) -> list:
    """The imported ``main``'s arguments by its parameters' names (graph inputs, and
    initializers kept as parameters)."""
    from fuzz import compat

    names = [compat.var_name(p) for p in mod["main"].params]
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"imported main has parameters no input names: {missing}")
    return [by_name[n] for n in names]


def _by_name(model, program: Program, opts, arrays: list) -> dict:
    """What can be bound to an imported ``main``'s parameters: initializers (the weights and
    the exporter's constants, parameters under ``keep_params_in_input``) and the feeds."""
    from onnx import numpy_helper

    from fuzz.onnx_export import feeds

    return {**{t.name: numpy_helper.to_array(t) for t in model.graph.initializer},
            **feeds(program, opts, arrays)}


class OnnxInputs(ImportedInputs):
    """An ONNX case's inputs: by name to the imported ``main``'s parameters (graph inputs, and
    initializers kept as parameters); onnxruntime's outputs are the reference."""

    def make(self) -> list:
        return main_args(self.mod, self.by_name)

    def import_probe(self, prog: Program, arrays: list) -> tuple:
        """The probe exported at the case's opset and options, onnxruntime's values (graph
        outputs in the probe's order), imported with the case's ``from_onnx`` options."""
        from fuzz.onnx_export import export, feeds

        model = export(prog, self.opts, arrays)
        theirs = onnxruntime_outputs(model, feeds(prog, self.opts, arrays))
        mod = import_model(model, prog, self.opts, arrays)
        return mod, main_args(mod, _by_name(model, prog, self.opts, arrays)), theirs


def _dim_env(model, program: Program, opts, arrays: list, env: dict) -> dict:
    """``env`` with the inputs' dims by their ONNX names (dim_param), as the importer names
    its variables."""
    from fuzz.onnx_export import feeds

    dim_env = dict(env)
    by_name = feeds(program, opts, arrays)
    for vi in model.graph.input:
        for j, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.dim_param and by_name.get(vi.name) is not None:
                dim_env[d.dim_param] = int(np.shape(by_name[vi.name])[j])
    return dim_env


def _crash_nodes(model, exc: BaseException, converter: str) -> list:
    """The indices of ``model``'s graph nodes an import crash may have come from: the node
    ``_construct_nodes`` was converting (from the traceback), else every node whose op has
    the crashing converter's class (``converter``: ``Mul._impl_v7``), in graph order."""
    by_output = {o: i for i, n in enumerate(model.graph.node) for o in n.output if o}
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "_construct_nodes" and frame.f_code.co_filename.endswith(
                "onnx_frontend.py"):
            node = frame.f_locals.get("node")
            outs = [o for o in getattr(node, "output", []) if o in by_output]
            if outs:
                return [by_output[outs[0]]]   # the outermost graph's node
        tb = tb.tb_next
    cls = converter.split(".")[0]
    if not cls:
        return []
    try:
        from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

        convert_map = _get_convert_map()
    except Exception:  # noqa: BLE001 - another frontend layout
        return []
    return [i for i, n in enumerate(model.graph.node)
            if getattr(convert_map.get(n.op_type), "__name__", None) == cls]


def dtype_origin(model, program: Program, opts, arrays: list, env: dict,
                 exc: BaseException, converter: str) -> Optional[str]:
    """Where ``from_onnx`` crashed on operands of mixed dtypes (``exc``, in ``converter``):
    the op an earlier converter made with a dtype other than onnxruntime's (what
    ``type_finding`` names as ``dtype_op``), or None. The model truncated before the crashing
    node (its inputs made graph outputs, ``onnx.utils.Extractor``: the same opset, nodes and
    initializers) is imported with the case's options and its declared output types checked
    against onnxruntime's outputs, as a case's are. One wrong declared dtype is one bug, whether
    a graph returns it (a dtype finding) or a later converter meets it (this crash). None where
    the truncated model does not import, or declares onnxruntime's dtypes."""
    import onnx
    from onnx.utils import Extractor

    from fuzz.onnx_export import feeds

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
        made = {o for n in model.graph.node for o in n.output if o}
        extractor = Extractor(inferred)
    except Exception:  # noqa: BLE001 - no types to truncate with: the crash stays as it is
        return None
    for index in _crash_nodes(model, exc, converter):
        outputs = list(dict.fromkeys(i for i in model.graph.node[index].input if i in made))
        if not outputs:
            continue
        try:
            part = extractor.extract_model([vi.name for vi in model.graph.input], outputs)
            expected = onnxruntime_outputs(part, feeds(program, opts, arrays))
            mod = import_model(part, program, opts, arrays)
            problem = declared_output_problem(mod, expected,
                                              _dim_env(part, program, opts, arrays, env))
        except Exception:  # noqa: BLE001 - the truncated model fails elsewhere: no origin
            continue
        op = type_finding(mod, problem).extra.get("dtype_op") if problem else None
        if op:
            return op
    return None


def judge_onnx(program: Program, variants: Optional[list] = None,
               input_seed: int = 0) -> Outcome:
    from fuzz.onnx_export import NotExportable, OnnxOptions, export, feeds

    variants = _variants(variants)
    t0 = time.perf_counter()
    opts = OnnxOptions.from_json(getattr(program, "options", None) or
                                 program.meta.get("onnx") or {})

    def done(o: Outcome) -> Outcome:
        o.extra.setdefault("onnx", opts.to_json())
        return finish(o, t0, variants[0], [])

    breadcrumb.mark(stage="export")
    made = export_case(program, input_seed, lambda arrays: export(program, opts, arrays),
                       NotExportable)
    if isinstance(made, Outcome):
        return done(made)
    env, arrays, model = made
    breadcrumb.mark(stage="onnxruntime")
    try:
        expected = onnxruntime_outputs(model, feeds(program, opts, arrays))
    except Exception as e:  # noqa: BLE001
        return done(_fail("onnxruntime", e, "onnx_rejected", "invalid"))
    wrong = numpy_disagreement(program, arrays, env, expected, "onnx_disagrees", "onnxruntime",
                               "onnxruntime")
    if wrong:
        return done(wrong)
    breadcrumb.mark(stage="import")
    try:
        mod = import_model(model, program, opts, arrays)
    except Exception as e:  # noqa: BLE001
        crash = import_crash(e, converter_frame)
        if _MIXED_DTYPES.search(str(e)):
            op = dtype_origin(model, program, opts, arrays, env, e,
                              crash.extra.get("converter", ""))
            if op:
                crash.extra["dtype_op"] = op
        return done(crash)
    dim_env = _dim_env(model, program, opts, arrays, env)
    try:
        problem = declared_output_problem(mod, expected, dim_env)
    except Exception as e:  # noqa: BLE001 - a type tvmfuzz cannot read
        return done(_fail("import", e, "tvmfuzz_error", "invalid"))
    if problem:
        return done(type_finding(mod, problem))
    # Initializers (weights and the exporter's constants) are parameters of main with
    # keep_params_in_input.
    by_name = _by_name(model, program, opts, arrays)
    out = judge_module(mod, OnnxInputs(program, input_seed, mod, by_name, expected, opts),
                       variants, t0=t0)
    out.extra.setdefault("onnx", opts.to_json())
    return out
