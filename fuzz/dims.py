"""Tensor dimensions in the program model: an ``int`` or a symbolic expression string.

Symbolic dims are strings over symbolic variable names with ``+ - * //`` and integer literals,
e.g. ``"n"`` or ``"n * 4"``. Strings keep the model plain JSON; this module is the only place
that parses them, so TVM (``fuzz.materialize``) and numpy (``fuzz.reference``) agree on meaning.
"""
from __future__ import annotations

import ast
import re
from typing import Mapping, Union

Dim = Union[int, str]

_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def is_static(d: Dim) -> bool:
    return isinstance(d, int)


def parse(d: Dim) -> ast.expr:
    if isinstance(d, int):
        return ast.Constant(d)
    tree = ast.parse(d, mode="eval").body
    for node in ast.walk(tree):
        if not isinstance(node, (ast.BinOp, ast.Name, ast.Constant, ast.Load, ast.Add, ast.Sub,
                                 ast.Mult, ast.FloorDiv, ast.Mod, ast.UnaryOp, ast.USub)):
            raise ValueError(f"not a dim expression: {d!r}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            raise ValueError(f"not a dim expression: {d!r}")
    return tree


def free_vars(d: Dim) -> list[str]:
    if isinstance(d, int):
        return []
    return sorted(set(_NAME.findall(d)))


def evaluate(d: Dim, env: Mapping[str, int]) -> int:
    if isinstance(d, int):
        return d

    def ev(n: ast.expr) -> int:
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return int(env[n.id])
        if isinstance(n, ast.UnaryOp):
            return -ev(n.operand)
        a, b = ev(n.left), ev(n.right)
        if isinstance(n.op, ast.Add):
            return a + b
        if isinstance(n.op, ast.Sub):
            return a - b
        if isinstance(n.op, ast.Mult):
            return a * b
        if isinstance(n.op, ast.FloorDiv):
            return a // b
        return a % b

    return ev(parse(d))


def _wrap(d: Dim) -> str:
    s = str(d)
    return s if isinstance(d, int) or _NAME.fullmatch(s) else f"({s})"


def add(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if b == 0:
        return a
    if a == 0:
        return b
    if isinstance(b, int) and b < 0:
        return f"{_wrap(a)} - {-b}"
    return f"{_wrap(a)} + {_wrap(b)}"


def sub(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if b == 0:
        return a
    return f"{_wrap(a)} - {_wrap(b)}"


def mul(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if a == 1:
        return b
    if b == 1:
        return a
    if a == 0 or b == 0:
        return 0
    if isinstance(a, int):  # canonical order: symbol first, as TVM prints it
        a, b = b, a
    return f"{_wrap(a)} * {_wrap(b)}"


def floordiv(a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if b == 1:
        return a
    return f"{_wrap(a)} // {_wrap(b)}"


def product(ds) -> Dim:
    out: Dim = 1
    for d in ds:
        out = mul(out, d)
    return out


def same(a: Dim, b: Dim) -> bool:
    """Provably equal for the generator's purposes: identical canonical text."""
    return str(a) == str(b) and type(a) is type(b)
