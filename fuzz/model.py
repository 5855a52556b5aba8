"""The program model: a test program as plain, JSON-serializable data.

Everything in tvmfuzz consumes this: the generator writes it, ``fuzz.materialize`` turns it into
an IRModule for the installed TVM, ``fuzz.reference`` runs it in numpy, the worker ships it
between machines, and the reducer edits it. It imports nothing from TVM on purpose: a case
written today must load under another TVM release.

A function is a list of blocks of nodes. Each node binds one value by name; ``op`` is either a
catalogue op name (``"relax.add"``) or one of the structural ops in ``STRUCTURAL_OPS``.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from .dims import Dim, free_vars

SCHEMA_VERSION = 1

# Structural (non-catalogue) node ops and the attrs each takes.
STRUCTURAL_OPS = {
    "tuple",       # args: fields
    "get_item",    # attrs: index
    "match_cast",  # attrs: ty (a type in JSON form)
    "call",        # attrs: func (name of a function in the program)
    "const",       # attrs: value (a number, broadcast to ty's shape), ty
    "if",          # args: cond (a 0-d bool tensor), then the values the branches take;
                   # attrs: then, else (names of branch functions, inlined as R.If's
                   # branches: their parameters are bound to args[1:] by position)
    "shape_tensor",  # args: x; R.shape_to_tensor(R.shape_of(x)): x's shape as an int64 tensor
    "reshape_dyn",   # args: x, t (a 1-d int64 tensor); attrs: dims (fresh symbolic dim names),
                     # known ({dim: value}, what t holds when the case runs):
                     # R.reshape(x, R.match_cast(R.tensor_to_shape(t), R.Shape(dims)))
    "dyn_slice",     # args: x, begin, end, strides (1-d int64 tensors, x's rank long); attrs:
                     # known ({fresh dim: value}, the extents the run gives them): ty is the
                     # result's, R.match_cast(R.dynamic_strided_slice(x, begin, end, strides),
                     # ty) (fuzz.dynshape.gen_slice)
    "dps_copy",      # args: x; R.call_dps_packed("runtime.TVMTensorCopyFromTo", (x,), x's
                     # type): a function the TVM runtime registers, destination-passing
    "call_tir",      # args: the PrimFunc's inputs; attrs: prim (a TIR case's JSON,
                     # fuzz.tir.model, its outputs its last parameters): R.call_tir to it,
                     # named tir_<node> in the module; ty: its output, or a tuple of them
                     # (fuzz.calltir)
}

# The Relax ops a structural node emits that no catalogue spec covers (bench/op_coverage.py
# counts them as reached).
STRUCTURAL_REACHES = {
    "shape_tensor": ("relax.shape_of", "relax.shape_to_tensor"),
    "reshape_dyn": ("relax.tensor_to_shape", "relax.reshape"),
    "dyn_slice": ("relax.dynamic_strided_slice",),
}

# Function kinds: an ordinary function of the module, or the body of an R.If branch (never a
# function of the module: materialize inlines it where an ``if`` node names it).
FUNC_KINDS = ("func", "branch")


@dataclass
class TensorTy:
    """A tensor type. ``shape=None`` with ``ndim=-1`` is ``R.Tensor`` with unknown rank;
    ``shape=None`` with ``ndim>=0`` is ndim-only; ``dtype=""`` is unknown dtype."""

    shape: Optional[list[Dim]]
    dtype: str
    ndim: int = -1

    def __post_init__(self):
        if self.shape is not None:
            self.shape = list(self.shape)
            self.ndim = len(self.shape)

    @property
    def rank(self) -> int:
        return self.ndim

    def known(self) -> bool:
        return self.shape is not None and self.dtype != ""

    def to_json(self) -> dict:
        return {"kind": "tensor", "shape": self.shape, "dtype": self.dtype, "ndim": self.ndim}


@dataclass
class TupleTy:
    fields: list["Ty"]

    def to_json(self) -> dict:
        return {"kind": "tuple", "fields": [f.to_json() for f in self.fields]}


Ty = Union[TensorTy, TupleTy]


def ty_from_json(d: dict) -> Ty:
    if d["kind"] == "tensor":
        return TensorTy(d["shape"], d["dtype"], d.get("ndim", -1))
    if d["kind"] == "tuple":
        return TupleTy([ty_from_json(f) for f in d["fields"]])
    raise ValueError(f"unknown type kind {d['kind']!r}")


def ty_vars(ty: Ty) -> list[str]:
    if isinstance(ty, TupleTy):
        return sorted({v for f in ty.fields for v in ty_vars(f)})
    return sorted({v for d in (ty.shape or []) for v in free_vars(d)})


@dataclass
class Param:
    name: str
    ty: Ty
    # Range of input values the case is run with; ops with a restricted domain (log, sqrt,
    # integer division) rely on it, so it is part of the case.
    lo: float = -2.0
    hi: float = 2.0
    # The type inputs are made with, when ``ty`` leaves shape or dtype unknown (a parameter
    # annotated ``R.Tensor(ndim=2)`` still receives a concrete tensor at run time).
    actual: Optional[Ty] = None

    @property
    def runtime_ty(self) -> Ty:
        return self.actual or self.ty


@dataclass
class Node:
    name: str
    op: str
    args: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    ty: Optional[Ty] = None      # the type the catalogue's shape rule infers
    annot: Optional[Ty] = None   # an explicit annotation; near-valid mode makes it disagree


@dataclass
class Block:
    dataflow: bool
    nodes: list[Node]


@dataclass
class Function:
    name: str
    params: list[Param]
    blocks: list[Block]
    ret: str
    kind: str = "func"               # "branch": the body of an R.If branch (FUNC_KINDS)
    # The declared return type where it is written explicitly (a near-valid mutant makes it
    # disagree with the body's type: apache/tvm#17348); None: TVM deduces it from the body.
    ret_annot: Optional[Ty] = None

    def nodes(self):
        for b in self.blocks:
            yield from b.nodes

    def node(self, name: str) -> Node:
        for n in self.nodes():
            if n.name == name:
                return n
        raise KeyError(name)

    def value_types(self) -> dict[str, Ty]:
        tys: dict[str, Ty] = {p.name: p.ty for p in self.params}
        for n in self.nodes():
            tys[n.name] = n.annot or n.ty
        return tys


@dataclass
class Program:
    functions: list[Function]
    entry: str = "main"
    meta: dict[str, Any] = field(default_factory=dict)

    def func(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def main(self) -> Function:
        return self.func(self.entry)

    def branches(self, node: "Node") -> list["Function"]:
        """The branch functions an ``if`` node names (then, else)."""
        return [self.func(node.attrs["then"]), self.func(node.attrs["else"])]

    def ops(self) -> list[str]:
        return [n.op for f in self.functions for n in f.nodes() if n.op not in STRUCTURAL_OPS]

    # --- JSON: the canonical form of a case ---------------------------------------------
    def to_json(self) -> dict:
        def ty(t):
            return None if t is None else t.to_json()

        return {
            "schema": SCHEMA_VERSION,
            "entry": self.entry,
            "meta": self.meta,
            "functions": [_func_json(f, ty) for f in self.functions],
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    ir = "relax"   # the IR a case is written in; TIR cases are fuzz.tir.model.TirProgram

    @staticmethod
    def from_json(d: dict) -> "Program":
        """A case from its JSON. A TIR case (``"kind": "tir"``) comes back as a TirProgram,
        which has the same case interface (to_json, dumps, copy, ops, meta), so stores,
        replays, workers and the reducer load either through this one call."""
        if d.get("kind") == "tir":
            from .tir.model import TirProgram

            return TirProgram.from_json(d)
        if d.get("kind") == "seeded":   # a TVMScript seed and its mutation (fuzz.seeded)
            from .seeded import SeededCase

            return SeededCase.from_json(d)
        if d.get("kind") == "onnx":
            return OnnxProgram.of(Program.from_json({k: v for k, v in d.items()
                                                     if k != "kind"}))
        if d.get("kind") == "torch":
            return TorchProgram.of(Program.from_json({k: v for k, v in d.items()
                                                      if k != "kind"}))
        if d.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"unsupported case schema {d.get('schema')!r}")

        def ty(t):
            return None if t is None else ty_from_json(t)

        funcs = []
        for f in d["functions"]:
            params = [Param(p["name"], ty(p["ty"]), p.get("lo", -2.0), p.get("hi", 2.0),
                            ty(p.get("actual")))
                      for p in f["params"]]
            blocks = [Block(b["dataflow"],
                            [Node(n["name"], n["op"], list(n["args"]), dict(n.get("attrs", {})),
                                  ty(n.get("ty")), ty(n.get("annot")))
                             for n in b["nodes"]])
                      for b in f["blocks"]]
            funcs.append(Function(f["name"], params, blocks, f["ret"], f.get("kind", "func"),
                                  ty(f.get("ret_annot"))))
        return Program(funcs, d.get("entry", "main"), dict(d.get("meta", {})))

    @staticmethod
    def loads(s: str) -> "Program":
        return Program.from_json(json.loads(s))

    def copy(self) -> "Program":
        """A deep copy: meta's nested dicts (variants, their schedules) are not shared, as
        TirProgram.copy."""
        return Program.loads(self.dumps())


class FrontendOptions:
    """Base of a frontend case's options (a dataclass of plain fields): their JSON, and back
    from it, ignoring names this version does not know."""

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: Optional[dict]):
        o = cls()
        for k, v in (d or {}).items():
            if hasattr(o, k):
                setattr(o, k, v)
        return o


class FrontendProgram(Program):
    """A program model written in a frontend's form and imported back by TVM's frontend: its
    export and import options are ``meta[ir]``, its JSON the program's with ``"kind": ir``."""

    ir = ""

    @classmethod
    def of(cls, prog: Program, options: Optional[dict] = None):
        out = cls(prog.functions, prog.entry, dict(prog.meta))
        if options is not None:
            out.meta[cls.ir] = dict(options)
        return out

    @property
    def options(self) -> dict:
        return dict(self.meta.get(self.ir) or {})

    def to_json(self) -> dict:
        return {"kind": self.ir, **super().to_json()}


class OnnxProgram(FrontendProgram):
    """An ONNX case: a Relax program model exported op by op to ONNX
    (``fuzz.onnx_export``). Options (``meta["onnx"]``): opset, initializers, dynamic dims,
    ``keep_params_in_input``, ``shape_dict``."""

    ir = "onnx"


class TorchProgram(FrontendProgram):
    """A PyTorch case: a Relax program model written as a ``torch.nn.Module``
    (``fuzz.torch_export``), exported with ``torch.export`` and imported by TVM's
    ``from_exported_program``. Options (``meta["torch"]``): decompositions, dynamic dims,
    weights as parameters, the importer's flags."""

    ir = "torch"


def _func_json(f: Function, ty) -> dict:
    d = {"name": f.name, "ret": f.ret, "params": [_param_json(p, ty) for p in f.params],
         "blocks": [{"dataflow": b.dataflow, "nodes": [_node_json(n, ty) for n in b.nodes]}
                    for b in f.blocks]}
    if f.kind != "func":   # written only where set: a case without control flow is unchanged
        d["kind"] = f.kind
    if f.ret_annot is not None:
        d["ret_annot"] = ty(f.ret_annot)
    return d


def _param_json(p: Param, ty) -> dict:
    d = {"name": p.name, "ty": ty(p.ty), "lo": p.lo, "hi": p.hi}
    if p.actual is not None:
        d["actual"] = ty(p.actual)
    return d


def _node_json(n: Node, ty) -> dict:
    d = {"name": n.name, "op": n.op, "args": n.args, "attrs": n.attrs, "ty": ty(n.ty)}
    if n.annot is not None:
        d["annot"] = ty(n.annot)
    return d


def replace(obj, **kw):
    return dataclasses.replace(obj, **kw)
