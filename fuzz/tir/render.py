"""TVMScript text of a ``TirProgram``.

TVM's parser evaluates the text as Python, and cases arrive as JSON from other machines, so
nothing from the case reaches the text unchecked: names must match ``NAME``, dtypes and scopes
come from allowlists, numbers must be finite ints or floats, and every statement and
expression kind is spelled by this module. A case that breaks any rule raises
``TirRenderError`` before any text exists.

The text is ``@T.prim_func(s_tir=True)`` for ``from tvm.script import tirx as T`` (the spelling
TVM 0.25, 0.26 and 0.27 all parse) without the import line: ``tvm.script.from_source`` binds
``T`` itself and refuses imports.
"""
from __future__ import annotations

import keyword
import math
import re
from typing import Optional

from .model import (BIN_OPS, CALLS, LOOP_KINDS, Alloc, Block, BufDecl, For, If,
                    Let, Store, TirProgram)

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64"})
SCOPES = frozenset({"global", "local"})
# Names the text itself uses; a case may not shadow them.
RESERVED = frozenset({"T", "range", "True", "False", "None"})
_INFIX = {"+": "+", "-": "-", "*": "*", "/": "/", "<": "<", "<=": "<=", ">": ">",
          ">=": ">=", "==": "==", "!=": "!="}
_FUNCS = {"min": "T.min", "max": "T.max", "floordiv": "T.floordiv",
          "floormod": "T.floormod", "and": "T.And", "or": "T.Or"}


# What a TIR case's .py file starts with (the print job adds it; repro.py takes it off again:
# tvm.script.from_source refuses import lines and binds T itself).
SCRIPT_HEADER = "from tvm.script import tirx as T\n\n\n"


class TirRenderError(ValueError):
    """The case cannot be rendered safely (or at all)."""


def _name(x) -> str:
    if not isinstance(x, str) or not NAME.match(x) or keyword.iskeyword(x) or x in RESERVED:
        raise TirRenderError(f"invalid name {x!r}")
    return x


def _dtype(x) -> str:
    if x not in DTYPES:
        raise TirRenderError(f"invalid dtype {x!r}")
    return x


def _scope(x) -> str:
    if x not in SCOPES:
        raise TirRenderError(f"invalid scope {x!r}")
    return x


def _int(x) -> int:
    if type(x) is not int:     # noqa: E721 - bool and int subclasses are not numbers here
        raise TirRenderError(f"expected an int, got {x!r}")
    return x


def _num(x) -> str:
    if type(x) is int:         # noqa: E721
        return repr(x)
    if type(x) is float and math.isfinite(x):
        return repr(x)
    raise TirRenderError(f"expected a finite number, got {x!r}")


def _ints(xs) -> list[int]:
    if not isinstance(xs, list):
        raise TirRenderError(f"expected a list of ints, got {xs!r}")
    return [_int(x) for x in xs]


def _tuple(xs) -> str:
    return "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"


class _Renderer:
    def __init__(self, prog: TirProgram, axis_separators_ok: bool):
        self.prog = prog
        self.sep_ok = axis_separators_ok
        self.lines: list[str] = []
        self.params = {}

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    # --- buffers --------------------------------------------------------------------------
    def buf_kwargs(self, b: BufDecl, sym_strides: Optional[list[str]] = None,
                   sym_offset: Optional[str] = None) -> list[str]:
        kw = []
        if b.strides is not None:
            if b.strides == "sym":
                if sym_strides is None:
                    raise TirRenderError(f"{b.name}: symbolic strides only on parameters")
                kw.append(f"strides={_tuple(sym_strides)}")
            else:
                st = _ints(b.strides)
                if len(st) != len(b.shape):
                    raise TirRenderError(f"{b.name}: {len(st)} strides for {len(b.shape)} dims")
                kw.append(f"strides={_tuple([repr(s) for s in st])}")
        if b.elem_offset is not None:
            if b.elem_offset == "sym":
                if sym_offset is None:
                    raise TirRenderError(f"{b.name}: elem_offset='sym' needs how='match_buffer'")
                kw.append(f"elem_offset={sym_offset}")
            else:
                kw.append(f"elem_offset={_int(b.elem_offset)}")
        if _int(b.offset_factor):
            kw.append(f"offset_factor={b.offset_factor}")
        if b.axis_separators is not None:
            if not self.sep_ok:
                raise TirRenderError(f"{b.name}: axis_separators are not supported by this TVM")
            kw.append(f"axis_separators={_ints(b.axis_separators)!r}")
        scope = _scope(b.scope)
        if scope != "global":
            kw.append(f'scope="{scope}"')
        return kw

    def head(self, b: BufDecl) -> str:
        _name(b.name)
        shape = _ints(b.shape)
        if not shape:
            raise TirRenderError(f"{b.name}: a buffer needs at least one dim")
        return f'{_tuple([repr(s) for s in shape])}, "{_dtype(b.dtype)}"'

    def signature(self, names: set) -> tuple[str, list[str]]:
        args, pre = [], []
        for b in self.prog.params:
            head = self.head(b)
            if b.how == "param":
                sym = None
                if b.strides == "sym":   # a string in T.Buffer declares the stride variable
                    sym = [f'"{b.name}_s{k}"' for k in range(len(b.shape))]
                    names.update(f"{b.name}_s{k}" for k in range(len(b.shape)))
                kw = self.buf_kwargs(b, sym)
                args.append(f"{b.name}: T.Buffer({', '.join([head] + kw)})")
            elif b.how == "match_buffer":
                h = f"{b.name}_handle"
                names.add(h)
                args.append(f"{h}: T.handle")
                sym = off = None
                if b.strides == "sym":
                    sym = [f"{b.name}_s{k}" for k in range(len(b.shape))]
                    pre += [f"{s} = T.int32()" for s in sym]
                if b.elem_offset == "sym":
                    off = f"{b.name}_elem_offset"
                    pre.append(f"{off} = T.int32()")
                names.update(sym or ())
                names.update([off] if off else ())
                kw = self.buf_kwargs(b, sym, off)
                pre.append(f"{b.name} = T.match_buffer({', '.join([h, head] + kw)})")
            else:
                raise TirRenderError(f"{b.name}: a parameter is how='param' or 'match_buffer'")
        return ", ".join(args), pre

    def alloc(self, a: Alloc, in_block: bool) -> str:
        b = a.buf
        if not isinstance(b, BufDecl):
            raise TirRenderError("alloc without a buffer")
        head = self.head(b)
        if b.how == "view":
            if b.base not in self.params:
                raise TirRenderError(f"{b.name}: view of unknown parameter {b.base!r}")
            if b.strides == "sym" or b.elem_offset == "sym":
                raise TirRenderError(f"{b.name}: a view needs constant strides and offset")
            kw = [f"data={_name(b.base)}.data"] + self.buf_kwargs(b)
            return f"{b.name} = T.decl_buffer({', '.join([head] + kw)})"
        if b.how != "alloc":
            raise TirRenderError(f"{b.name}: allocations are how='alloc' or 'view'")
        kw = self.buf_kwargs(b)
        if a.form == "decl_buffer":
            fn = "T.decl_buffer"
        elif a.form == "alloc_buffer":
            fn = "T.sblock_alloc_buffer" if in_block else "T.alloc_buffer"
        else:
            raise TirRenderError(f"invalid alloc form {a.form!r}")
        return f"{b.name} = {fn}({', '.join([head] + kw)})"

    # --- statements -----------------------------------------------------------------------
    def stmts(self, ss, depth: int, loops: dict, in_block: bool) -> None:
        if not isinstance(ss, list):
            raise TirRenderError("a statement list must be a list")
        if not ss:
            self.emit(depth, "T.evaluate(0)")
        for s in ss:
            self.stmt(s, depth, loops, in_block)

    def stmt(self, s, depth: int, loops: dict, in_block: bool) -> None:
        if isinstance(s, For):
            if s.kind not in LOOP_KINDS:
                raise TirRenderError(f"invalid loop kind {s.kind!r}")
            self.emit(depth, f"for {_name(s.var)} in T.{s.kind}({_int(s.extent)}):")
            self.stmts(s.body, depth + 1, {**loops, s.var: s.extent}, in_block)
        elif isinstance(s, Block):
            self.block(s, depth, loops)
        elif isinstance(s, Store):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(depth, f"{_name(s.buf)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, If):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.stmts(s.then, depth + 1, loops, in_block)
            if s.else_ is not None:
                self.emit(depth, "else:")
                self.stmts(s.else_, depth + 1, loops, in_block)
        elif isinstance(s, Let):
            if s.form not in ("let", "scalar"):
                raise TirRenderError(f"invalid let form {s.form!r}")
            ann = f"T.let[T.{_dtype(s.dtype)}]" if s.form == "let" else f"T.{_dtype(s.dtype)}"
            self.emit(depth, f"{_name(s.var)}: {ann} = {self.expr(s.value)}")
            self.stmts(s.body, depth, loops, in_block)
        elif isinstance(s, Alloc):
            self.emit(depth, self.alloc(s, in_block))
        else:
            raise TirRenderError(f"unknown statement {type(s).__name__}")

    def block(self, b: Block, depth: int, loops: dict) -> None:
        self.emit(depth, f'with T.sblock("{_name(b.name)}"):')
        d = depth + 1
        ivs = b.iter_vars
        for iv in ivs:
            _name(iv.name)
            _int(iv.extent)
            if iv.kind not in ("S", "R"):
                raise TirRenderError(f"invalid iteration kind {iv.kind!r}")
        bound = [iv.binding[1] if isinstance(iv.binding, list) and len(iv.binding) == 2
                 and iv.binding[0] == "var" else None for iv in ivs]
        if ivs and all(v is not None and loops.get(v) == iv.extent for v, iv in zip(bound, ivs)) \
                and len(set(bound)) == len(bound):
            lhs = ", ".join(iv.name for iv in ivs)
            kinds = "".join(iv.kind for iv in ivs)
            self.emit(d, f'{lhs} = T.axis.remap("{kinds}", [{", ".join(map(_name, bound))}])')
        else:
            for iv in ivs:
                axis = "spatial" if iv.kind == "S" else "reduce"
                self.emit(d, f"{iv.name} = T.axis.{axis}({iv.extent}, {self.expr(iv.binding)})")
        if b.where is not None:
            self.emit(d, f"T.where({self.expr(b.where)})")
        body = list(b.body)
        while body and isinstance(body[0], Alloc):
            self.emit(d, self.alloc(body.pop(0), True))
        if b.init is not None:
            self.emit(d, "with T.init():")
            self.stmts(b.init, d + 1, {}, True)
        if body or b.init is None:
            self.stmts(body, d, {}, True)

    # --- expressions ----------------------------------------------------------------------
    def expr(self, e) -> str:
        if not isinstance(e, list) or not e:
            raise TirRenderError(f"invalid expression {e!r:.80}")
        k = e[0]
        n = len(e)
        if k == "const" and n == 3:
            t = _dtype(e[1])
            if t == "bool":
                if e[2] not in (True, False, 0, 1) or type(e[2]) not in (bool, int):
                    raise TirRenderError(f"invalid bool constant {e[2]!r}")
                return f"T.bool({bool(e[2])})"
            return f"T.{t}({_num(e[2])})"
        if k == "var" and n == 2:
            return _name(e[1])
        if k == "load" and n == 3 and isinstance(e[2], list):
            return f"{_name(e[1])}[{', '.join(self.expr(i) for i in e[2])}]"
        if k == "bin" and n == 4 and e[1] in BIN_OPS:
            a, b = self.expr(e[2]), self.expr(e[3])
            if e[1] in _INFIX:
                return f"({a} {_INFIX[e[1]]} {b})"
            return f"{_FUNCS[e[1]]}({a}, {b})"
        if k == "not" and n == 2:
            return f"T.Not({self.expr(e[1])})"
        if k == "cast" and n == 3:
            return f'T.Cast("{_dtype(e[1])}", {self.expr(e[2])})'
        if k in ("select", "ite") and n == 4:
            fn = "T.Select" if k == "select" else "T.if_then_else"
            return f"{fn}({self.expr(e[1])}, {self.expr(e[2])}, {self.expr(e[3])})"
        if k == "call" and n == 3 and e[1] in CALLS:
            return f"T.{e[1]}({self.expr(e[2])})"
        raise TirRenderError(f"invalid expression {e!r:.80}")

    def render(self) -> str:
        p = self.prog
        names: set = set()
        for b in p.params:
            _name(b.name)
            if b.name in self.params:
                raise TirRenderError(f"duplicate parameter {b.name!r}")
            self.params[b.name] = b
            names.add(b.name)
        sig, pre = self.signature(names)
        for b in p.allocs():
            if _name(b.name) in names:
                raise TirRenderError(f"{b.name!r} declared twice")
            names.add(b.name)
        self.emit(0, "@T.prim_func(s_tir=True)")
        self.emit(0, f"def {_name(p.name)}({sig}):")
        self.emit(1, f'T.func_attr({{"global_symbol": "{p.name}", "tir.noalias": True}})')
        for line in pre:
            self.emit(1, line)
        self.stmts(p.body, 1, {}, False)
        return "\n".join(self.lines) + "\n"


def _check_unique(prog: TirProgram) -> None:
    seen = set()
    for b in prog.params:
        for n in (b.name, f"{b.name}_handle", f"{b.name}_elem_offset") + tuple(
                f"{b.name}_s{k}" for k in range(len(b.shape) if isinstance(b.shape, list) else 0)):
            if n in seen:
                raise TirRenderError(f"name {n!r} clashes with a generated name")
            seen.add(n)


def to_tvmscript(prog: TirProgram, axis_separators_ok: bool = False) -> str:
    """TVMScript of ``prog``; raises ``TirRenderError`` for anything unsafe or unsupported
    (``axis_separators`` when ``axis_separators_ok`` is False: only TVM 0.25 has them)."""
    _check_unique(prog)
    return _Renderer(prog, axis_separators_ok).render()
