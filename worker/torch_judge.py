"""Judge a PyTorch case (``fuzz.model.TorchProgram``, kind ``torch``): write the program model
as a ``torch.nn.Module`` (``fuzz.torch_export``), run it in eager PyTorch (the reference),
``torch.export.export`` it (``run_decompositions()`` after, where the case says), import it with
TVM's frontend (``tvm.relax.frontend.torch.from_exported_program``, with the case's flags),
check the imported module's declared output types against eager PyTorch's outputs, then the
one judging loop of a Relax module (``worker.execute.judge_module``) with ``TorchInputs``, whose
reference is eager PyTorch's outputs. Sandbox child only.

Stages and verdicts of their own:

| stage | what fails | verdict, kind |
|---|---|---|
| ``export`` | the case has no torch form | ``invalid``, ``not_exportable`` |
| ``import`` | this interpreter has no torch, or its TVM's importer lacks a flag the case sets | ``invalid``, ``needs_torch`` |
| ``eager`` | eager PyTorch refuses or fails running the module | ``invalid``, ``torch_rejected`` |
| ``eager`` | its outputs differ from numpy's on the program (the export's fault) | ``invalid``, ``torch_disagrees`` |
| ``torch_export`` | ``torch.export`` (or ``run_decompositions``) refuses the module | ``invalid``, ``torch_rejected`` |
| ``import`` | ``from_exported_program`` raises | ``fail``, ``crash`` (the converter in ``extra``) |
| ``import`` | a declared output shape or dtype is not what eager PyTorch computed | ``fail``, ``shape_inference`` |
"""
from __future__ import annotations

import time
import warnings
from typing import Optional

import numpy as np

from fuzz.inputs import make_inputs
from fuzz.model import Program
from fuzz.outcome import Outcome

from . import breadcrumb
from .execute import _fail, _variants, finish, judge_module
from .frontend import (ImportedInputs, export_case, import_crash, numpy_disagreement,
                       type_finding)


def to_torch(a):
    """A numpy input as a torch tensor (bfloat16 through float32: numpy has no bfloat16)."""
    import numpy as np
    import torch

    a = np.asarray(a)
    if a.dtype.name == "bfloat16":
        return torch.from_numpy(np.array(a.astype(np.float32), copy=True)).to(torch.bfloat16)
    return torch.from_numpy(np.array(a, copy=True))


def to_numpy(t):
    """A torch result as numpy (bfloat16 as ml_dtypes' bfloat16)."""
    import torch

    t = t.detach()
    if t.dtype == torch.bfloat16:
        import ml_dtypes

        return t.float().numpy().astype(ml_dtypes.bfloat16)
    return t.numpy()


def load_module(source: str):
    """(the ``Model`` instance, ``DYNAMIC``) of a module's source (tvmfuzz wrote it)."""
    scope: dict = {}
    exec(compile(source, "torch_model.py", "exec"), scope)   # noqa: S102 - our own text
    return scope["Model"]().eval(), scope.get("DYNAMIC") or {}


def export_program(model, args: tuple, names: list, dynamic: dict, decompose: bool):
    """``torch.export.export`` of ``model`` on ``args``; the dims ``dynamic`` names (input ->
    {axis: name}) are ``Dim.AUTO`` (torch keeps a dim static where the module needs it so);
    ``run_decompositions()`` after where ``decompose``."""
    import warnings

    import torch

    shapes = None
    if dynamic:
        shapes = {n: {int(ax): torch.export.Dim.AUTO for ax in dynamic[n]} if n in dynamic
                  else None for n in names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(model, args, dynamic_shapes=shapes)
        if decompose:
            ep = ep.run_decompositions()
    return ep


IMPORT_FLAGS = ("keep_params_as_input", "unwrap_unit_return_tuple", "no_bind_return_tuple",
                "run_ep_decomposition")


class MissingFlag(Exception):
    """This TVM's from_exported_program lacks a flag the case sets off its default."""


def import_flags(opts) -> dict:
    """The case's flags for this TVM's ``from_exported_program``: a flag it lacks is left out
    where the case has it at the default (older releases), else ``MissingFlag``."""
    import inspect

    from tvm.relax.frontend.torch import from_exported_program

    from fuzz.torch_export import TorchOptions

    params = inspect.signature(from_exported_program).parameters
    default = TorchOptions().to_json()
    flags = {}
    for k in IMPORT_FLAGS:
        v = bool(getattr(opts, k))
        if k in params:
            flags[k] = v
        elif v != default[k]:
            raise MissingFlag(f"from_exported_program of this TVM has no {k} (the case sets "
                              f"it to {v})")
    return flags


def import_program(ep, opts):
    """TVM's import of ``ep`` with the case's flags."""
    from tvm.relax.frontend.torch import from_exported_program

    flags = import_flags(opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_exported_program(ep, **flags)


def converter_frame(exc: BaseException) -> str:
    """The ATen op whose conversion raised (``softmax.int``): ``func_name`` of the innermost
    ``_translate_fx_graph`` frame of TVM's torch frontend; for an op the importer has no
    converter for, the names its refusal lists; "" where none is on the traceback."""
    found = ""
    tb = exc.__traceback__
    while tb is not None:
        frame, code = tb.tb_frame, tb.tb_frame.f_code
        if "frontend/torch" in code.co_filename.replace("\\", "/"):
            if code.co_name == "_translate_fx_graph" and frame.f_locals.get("func_name"):
                found = str(frame.f_locals["func_name"])
            elif code.co_name == "_check_unsupported_func_type":
                import re

                m = re.search(r"\[(.*?)\]", str(exc))
                # TVM lists them from a set: in any order from one run to the next
                names = sorted(n.strip() for n in m.group(1).replace("'", "").split(",")) \
                    if m else ["?"]
                found = "unsupported " + ", ".join(names)
        tb = tb.tb_next
    return found


def main_inputs(mod, by_name: dict) -> list:
    """The imported ``main``'s arguments: the user inputs by name, then (with
    ``keep_params_as_input``) the parameters the importer kept in ``main``'s ``params``
    attribute, in order. Uses TVM's objects' attributes only: repro.py runs it too."""
    import numpy as np   # (repro.py holds this function alone)

    main = mod["main"]
    params = list(main.params)
    attrs = main.attrs if main.attrs is not None else {}
    n_user = int(attrs["num_input"]) if "num_input" in attrs else len(params)
    names = [getattr(p, "name", None) or p.name_hint for p in params[:n_user]]
    missing = [n for n in names if n not in by_name]
    if missing:
        raise KeyError(f"imported main has parameters no input names: {missing}")
    args = [by_name[n] for n in names]
    if n_user < len(params):
        args += [np.asarray(t.numpy()) for t in attrs["params"]]
    return args


def torch_dims(mod, args: list) -> dict:
    """The imported ``main``'s symbolic dims (``s17``) bound to the inputs' dims."""
    import numpy as np

    env = {}
    for p, a in zip(mod["main"].params, args):
        ty = getattr(p, "ty", None) or p.struct_info
        for d, n in zip(getattr(getattr(ty, "shape", None), "values", None) or [],
                        np.shape(a)):
            if not hasattr(d, "value"):
                env.setdefault(str(d), int(n))
    return env


# Written into a PyTorch repro.py as they are (reducer/repro.py).
REPRO_CODE = (to_torch, to_numpy, export_program, main_inputs, torch_dims)


class TorchInputs(ImportedInputs):
    """A PyTorch case's inputs: by name to the imported ``main``'s parameters (and the weights
    the importer kept as parameters); eager PyTorch's outputs are the reference."""

    def make(self) -> list:
        return main_inputs(self.mod, self.by_name)

    def import_probe(self, prog: Program, arrays: list) -> tuple:
        """The probe written as a module with the case's options, eager PyTorch's values
        (forward returns them in the probe's order), exported (and decomposed) and imported
        with the case's flags."""
        import torch

        from fuzz.torch_export import full_source, user_inputs

        model, dynamic = load_module(full_source(prog, self.opts, arrays))
        ins = user_inputs(prog, self.opts, arrays)
        args = tuple(to_torch(a) for a in ins.values())
        with torch.no_grad():
            theirs = [to_numpy(t) for t in model(*args)]
        ep = export_program(model, args, list(ins), dynamic, bool(self.opts.decompose))
        mod = import_program(ep, self.opts)
        return mod, main_inputs(mod, ins), theirs


def imported_module(program: Program, input_seed: int = 0):
    """The module TVM imports from ``program``'s exported program (for printing a finding)."""
    from fuzz.torch_export import TorchOptions, full_source, user_inputs

    opts = TorchOptions.from_json(program.meta.get("torch") or {})
    _, arrays = make_inputs(program, input_seed)
    model, dynamic = load_module(full_source(program, opts, arrays))
    ins = user_inputs(program, opts, arrays)
    ep = export_program(model, tuple(to_torch(a) for a in ins.values()), list(ins), dynamic,
                        bool(opts.decompose))
    return import_program(ep, opts)


def judge_torch(program: Program, variants: Optional[list] = None,
                input_seed: int = 0) -> Outcome:
    from fuzz.torch_export import NotExportable, TorchOptions, full_source, user_inputs

    from .onnx_judge import output_type_problem

    variants = _variants(variants)
    t0 = time.perf_counter()
    opts = TorchOptions.from_json(program.meta.get("torch") or {})

    def done(o: Outcome) -> Outcome:
        o.extra.setdefault("torch", opts.to_json())
        return finish(o, t0, variants[0], [])

    breadcrumb.mark(stage="export")
    made = export_case(program, input_seed, lambda arrays: full_source(program, opts, arrays),
                       NotExportable)
    if isinstance(made, Outcome):
        return done(made)
    env, arrays, source = made
    try:
        import torch

        flags = import_flags(opts)
    except ImportError as e:   # a release's env without torch (bisect), or its frontend
        return done(Outcome("invalid", "needs_torch", "import", type(e).__name__,
                            f"this interpreter cannot import torch or TVM's torch frontend: "
                            f"{e} (pip install torch there)"))
    except MissingFlag as e:
        return done(Outcome("invalid", "needs_torch", "import", "MissingFlag", str(e)))
    breadcrumb.mark(stage="eager")
    try:
        torch.set_num_threads(1)
        model, dynamic = load_module(source)
        ins = user_inputs(program, opts, arrays)
        args = tuple(to_torch(a) for a in ins.values())
        with torch.no_grad():
            expected = [to_numpy(t) for t in model(*args)]
    except Exception as e:  # noqa: BLE001
        return done(_fail("eager", e, "torch_rejected", "invalid"))
    wrong = numpy_disagreement(program, arrays, env, expected, "torch_disagrees", "eager",
                               "eager PyTorch")
    if wrong:
        return done(wrong)
    breadcrumb.mark(stage="torch_export")
    try:
        ep = export_program(model, args, list(ins), dynamic, bool(opts.decompose))
    except Exception as e:  # noqa: BLE001
        return done(_fail("torch_export", e, "torch_rejected", "invalid"))
    breadcrumb.mark(stage="import")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from tvm.relax.frontend.torch import from_exported_program

            mod = from_exported_program(ep, **flags)
    except Exception as e:  # noqa: BLE001
        return done(import_crash(e, converter_frame))
    try:
        from fuzz import compat

        main_args = main_inputs(mod, ins)
        dims = torch_dims(mod, main_args)

        def dim_value(d):
            return int(d.value) if hasattr(d, "value") else dims.get(str(d))

        problem = output_type_problem(compat.ret_type(mod["main"]), expected, dim_value,
                                      "eager PyTorch")
    except Exception as e:  # noqa: BLE001 - a type or parameter list tvmfuzz cannot read
        return done(_fail("import", e, "tvmfuzz_error", "invalid"))
    if problem:
        return done(type_finding(mod, problem))
    out = judge_module(mod, TorchInputs(program, input_seed, mod, ins, expected, opts), variants,
                       t0=t0)
    out.extra.setdefault("torch", opts.to_json())
    return out
