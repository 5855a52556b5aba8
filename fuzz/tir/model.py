"""The TIR program model: one PrimFunc as plain, JSON-serialisable data.

Like ``fuzz.model`` it imports nothing from TVM: a case travels between machines and TVM
releases as data, and only ``fuzz.tir.render`` turns it into TVMScript (after validating every
name, dtype and number, because the parser evaluates the text as Python).

Statements are dataclasses; expressions are small JSON trees (lists), built with the helpers at
the end of this module:

    ["const", dtype, value]        ["var", name]              ["load", buf, [index, ...]]
    ["bin", op, a, b]              ["not", a]                 ["cast", dtype, a]
    ["select", cond, a, b]         ["ite", cond, a, b]        ["call", fn, a]

``bin`` ops: + - * / min max floordiv floormod < <= > >= == != and or. Loop and block iteration
variables are int32; a ``Let`` variable has the dtype it declares.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any, Optional, Union

SCHEMA_VERSION = 1

HOWS = ("param", "match_buffer", "alloc", "view")
LOOP_KINDS = ("serial", "parallel", "vectorized", "unroll")
BIN_OPS = ("+", "-", "*", "/", "min", "max", "floordiv", "floormod",
           "<", "<=", ">", ">=", "==", "!=", "and", "or")
COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
CALLS = ("exp", "log", "sqrt", "tanh", "sin", "cos", "floor", "fabs", "abs", "sigmoid")

Expr = list   # see the module docstring


@dataclass
class BufDecl:
    name: str
    shape: list[int]
    dtype: str
    # param: a ``T.Buffer`` parameter; match_buffer: a ``T.handle`` parameter bound with
    # ``T.match_buffer``; alloc: a temporary; view: ``T.decl_buffer(data=<base>.data)``.
    how: str = "param"
    # None (compact), ints, or "sym": stride variables bound by the caller's array.
    strides: Union[list[int], str, None] = None
    elem_offset: Union[int, str, None] = None   # int, "sym" (match_buffer only) or None
    offset_factor: int = 0
    scope: str = "global"
    axis_separators: Optional[list[int]] = None
    base: Optional[str] = None                  # the param a view aliases

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass
class For:
    var: str
    extent: int
    kind: str
    body: list


@dataclass
class IterVar:
    name: str
    kind: str       # "S" spatial, "R" reduce
    extent: int
    binding: Expr   # an int32 expression of the enclosing loop variables


@dataclass
class Block:
    name: str
    iter_vars: list[IterVar]
    init: Optional[list]      # statements of ``T.init()``: run when every R var is 0
    body: list
    where: Optional[Expr] = None   # ``T.where`` predicate: the instance runs only where true


@dataclass
class Store:
    buf: str
    indices: list[Expr]
    value: Expr


@dataclass
class If:
    cond: Expr
    then: list
    else_: Optional[list] = None


@dataclass
class Let:
    """``var`` bound to ``value`` in ``body``. form "let" is an immutable binding
    (``x: T.let[T.float32] = v``); "scalar" is ``x: T.float32 = v``, which TVM 0.25+ parses
    as a mutable one-element local buffer: the same values, another path through TVM."""
    var: str
    dtype: str
    value: Expr
    body: list
    form: str = "let"


@dataclass
class Alloc:
    """Declares ``buf`` (how alloc or view) for the rest of the enclosing statement list.

    ``form`` "alloc_buffer" is ``T.alloc_buffer`` at function scope and
    ``T.sblock_alloc_buffer`` inside a block; "decl_buffer" is ``T.decl_buffer``."""
    buf: BufDecl
    form: str = "alloc_buffer"


Stmt = Union[For, Block, Store, If, Let, Alloc]
_STMTS = {"for": For, "block": Block, "store": Store, "if": If, "let": Let, "alloc": Alloc}
_TAG = {v: k for k, v in _STMTS.items()}
_BODIES = ("body", "init", "then", "else_")


def stmt_to_json(s) -> dict:
    d: dict[str, Any] = {"stmt": _TAG[type(s)]}
    for f in fields(s):
        v = getattr(s, f.name)
        if f.name in _BODIES and v is not None:
            v = [stmt_to_json(x) for x in v]
        elif f.name == "iter_vars":
            v = [[iv.name, iv.kind, iv.extent, iv.binding] for iv in v]
        elif f.name == "buf" and isinstance(v, BufDecl):
            v = buf_to_json(v)
        d[f.name] = v
    return d


def stmt_from_json(d: dict):
    cls = _STMTS[d["stmt"]]
    kw = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name in _BODIES and v is not None:
            v = [stmt_from_json(x) for x in v]
        elif f.name == "iter_vars":
            v = [IterVar(*x) for x in v]
        elif f.name == "buf" and isinstance(v, dict):
            v = buf_from_json(v)
        kw[f.name] = v
    return cls(**kw)


def buf_to_json(b: BufDecl) -> dict:
    return {f.name: getattr(b, f.name) for f in fields(b)}


def buf_from_json(d: dict) -> BufDecl:
    return BufDecl(**{f.name: d[f.name] for f in fields(BufDecl) if f.name in d})


@dataclass
class TirProgram:
    name: str
    params: list[BufDecl]
    body: list
    # generator, seed, mode, inputs (value range per param), outputs, invalid (near-valid).
    meta: dict[str, Any] = field(default_factory=dict)

    ir = "tir"   # the case interface shared with fuzz.model.Program (campaigns, corpus)

    def ops(self) -> list[str]:
        """What the campaign's op coverage counts: none (TIR cases are counted apart)."""
        return []

    def to_json(self) -> dict:
        return {"kind": "tir", "schema": SCHEMA_VERSION, "name": self.name,
                "params": [buf_to_json(p) for p in self.params],
                "body": [stmt_to_json(s) for s in self.body], "meta": self.meta}

    @staticmethod
    def from_json(d: dict) -> "TirProgram":
        if d.get("kind") != "tir" or d.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"not a TIR case of schema {SCHEMA_VERSION}: "
                             f"kind={d.get('kind')!r} schema={d.get('schema')!r}")
        return TirProgram(d["name"], [buf_from_json(p) for p in d["params"]],
                          [stmt_from_json(s) for s in d["body"]], dict(d.get("meta", {})))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    @staticmethod
    def loads(s: str) -> "TirProgram":
        return TirProgram.from_json(json.loads(s))

    def digest(self) -> str:
        """sha256 of the canonical JSON (meta included: it holds the input ranges)."""
        canon = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()

    def copy(self) -> "TirProgram":
        """A deep copy: meta's nested dicts (variants, schedule) are not shared."""
        return TirProgram.loads(self.dumps())

    def param(self, name: str) -> BufDecl:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def allocs(self) -> list[BufDecl]:
        """Every temporary and view, in program order."""
        return [s.buf for s in walk(self.body) if isinstance(s, Alloc)]


def walk(stmts):
    """Every statement, depth first."""
    for s in stmts:
        yield s
        for name in _BODIES:
            sub = getattr(s, name, None)
            if isinstance(sub, list):
                yield from walk(sub)


# --- expression helpers ----------------------------------------------------------------------
def const(dtype: str, value) -> Expr:
    return ["const", dtype, value]


def var(name: str) -> Expr:
    return ["var", name]


def load(buf: str, indices: list) -> Expr:
    return ["load", buf, list(indices)]


def binop(op: str, a: Expr, b: Expr) -> Expr:
    return ["bin", op, a, b]


def not_(a: Expr) -> Expr:
    return ["not", a]


def cast(dtype: str, a: Expr) -> Expr:
    return ["cast", dtype, a]


def select(c: Expr, a: Expr, b: Expr) -> Expr:
    return ["select", c, a, b]


def ite(c: Expr, a: Expr, b: Expr) -> Expr:
    return ["ite", c, a, b]


def call(fn: str, a: Expr) -> Expr:
    return ["call", fn, a]


def expr_nodes(e: Expr):
    """Every node of an expression tree, depth first."""
    yield e
    k = e[0]
    if k == "load":
        for i in e[2]:
            yield from expr_nodes(i)
    elif k == "bin":
        yield from expr_nodes(e[2])
        yield from expr_nodes(e[3])
    elif k in ("not",):
        yield from expr_nodes(e[1])
    elif k in ("cast", "call"):
        yield from expr_nodes(e[2])
    elif k in ("select", "ite"):
        for x in e[1:]:
            yield from expr_nodes(x)
