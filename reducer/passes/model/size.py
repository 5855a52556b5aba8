"""The size of a Relax case: a table of named measures, compared in table order.

``size_key`` is the measure every accepted candidate must decrease (lexicographically); a
pass names in ``measures`` the entries its edits decrease. ``structure`` is the part that
removals depend on (ddmin does not re-ask a refused chunk while it is unchanged).
"""
from __future__ import annotations

from fuzz.catalogue import CATALOGUE
from fuzz.model import Program, TensorTy

from ...size import plain

from .helpers import ty_vars, variants


def _nodes(prog: Program) -> int:
    return sum(1 for f in prog.functions for _ in f.nodes())


def _outputs(prog: Program) -> int:
    return sum(len(n.args) + 1 for f in prog.functions for n in f.nodes() if n.name == f.ret
               and n.op == "tuple")


def _variants(prog: Program) -> int:
    vs = variants(prog)
    return len(vs) + sum(len(v.get("passes") or []) + len(v.get("extra_passes") or [])
                         for v in vs)


def _variant_fields(prog: Program) -> int:
    return sum(len(v.get("target", {})) - 1 + (v.get("pipeline") not in ("default",))
               + (v.get("exec_mode", "bytecode") != "bytecode")
               + (v.get("target", {}).get("kind") == "c") for v in variants(prog))


def _params(prog: Program) -> int:
    return sum(len(f.params) for f in prog.functions)


def _blocks(prog: Program) -> int:
    return sum(len(f.blocks) + sum(b.dataflow for b in f.blocks) for f in prog.functions)


def _annotations(prog: Program) -> int:
    fs = prog.functions
    return sum(n.annot is not None for f in fs for n in f.nodes()) + sum(
        p.actual is not None for f in fs for p in f.params)


def _param_types(prog: Program) -> list:
    return [p.runtime_ty for f in prog.functions for p in f.params]


def _symbolic_dims(prog: Program) -> int:
    return sum(len(ty_vars(t)) for t in _param_types(prog))


def _dims(prog: Program) -> int:
    return sum(d for t in _param_types(prog) if isinstance(t, TensorTy) for d in t.shape or []
               if isinstance(d, int))


def _dtypes(prog: Program) -> int:
    return sum(isinstance(t, TensorTy) and bool(t.dtype) and not plain(t.dtype)
               for t in _param_types(prog))


def _attrs(prog: Program) -> int:
    nodes = [n for f in prog.functions for n in f.nodes() if n.op in CATALOGUE]
    return sum(_attr_cost(v) for n in nodes for v in n.attrs.values()) + sum(
        len(n.attrs) for n in nodes)


def _attr_cost(v) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return min(abs(v), 1000) + (v < 0)
    if isinstance(v, float):
        return int(v != 0.0)
    if isinstance(v, str):
        return 0 if v == "float32" else 1
    if isinstance(v, (list, tuple)):
        return sum(_attr_cost(x) for x in v) + len(v)
    return 0 if v is None else 1


MEASURES = {                              # in size-key order: earlier ones weigh more
    "nodes": _nodes,                      # value bindings, all functions
    "call_tir": lambda prog: sum(n.op == "call_tir" for f in prog.functions
                                 for n in f.nodes()),   # calls of generated PrimFuncs
    "functions": lambda prog: len(prog.functions),
    "outputs": _outputs,                  # fields of returned tuples (+1 per tuple)
    "variants": _variants,                # compile variants and their pass lists
    "schedule_steps": lambda prog: sum(len(v.get("schedule_steps") or [])
                                       for v in variants(prog)),   # pinned schedules
    "params": _params,
    "blocks": _blocks,                    # blocks, dataflow ones twice
    "annotations": _annotations,          # explicit annotations, erased parameter types
    "symbolic_dims": _symbolic_dims,      # of the parameters' runtime types
    "dims": _dims,                        # sum of static parameter dims
    "dtypes": _dtypes,                    # parameters of a dtype not plain (float32, int32)
    "attrs": _attrs,                      # catalogue-op attributes, by plainness
    "variant_fields": _variant_fields,    # target options, pipeline, exec mode, c target
    "onnx_options": lambda prog: sum(v is True for k, v in (prog.meta.get("onnx") or {}).items()
                                     if k != "opset"),   # ONNX export/import flags on
    "torch_options": lambda prog: _torch_options(prog),   # PyTorch options off their defaults
}
def _torch_options(prog) -> int:
    options = prog.meta.get("torch") or {}
    if not options:
        return 0
    from fuzz.torch_export import TorchOptions

    default = TorchOptions().to_json()
    return sum(k in default and v != default[k] for k, v in options.items())


STRUCTURE = ("nodes", "functions", "outputs", "variants", "params")


def size_key(prog: Program) -> tuple:
    return tuple(m(prog) for m in MEASURES.values())


def smaller(a: Program, b: Program) -> bool:
    return size_key(a) < size_key(b)


def structure(prog: Program) -> tuple:
    """What removals depend on: bindings, functions, outputs, builds, parameters."""
    return tuple(MEASURES[m](prog) for m in STRUCTURE)


def bindings(prog: Program) -> int:
    """The size the reducer reports: value bindings over all functions."""
    return _nodes(prog)
