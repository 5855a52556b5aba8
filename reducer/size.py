"""Sizes of TVMScript text, read with Python's ``ast`` (never executed): how many value
bindings a module has (the figure reductions are compared by) and the table of measures
every accepted IR candidate must decrease (the size key of reducer/passes/ir)."""
from __future__ import annotations

import ast
import re

_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")
_DTYPE = re.compile(r'"(float\d+\w*|bfloat16|u?int\d+)"')


def plain_dtype(dtype: str) -> str:
    """The dtype a reduced case writes for ``dtype``: float32 for a float, int32 for an
    integer (an index operand stays an integer: a float32 index is not what a user writes),
    a bool stays a bool."""
    if dtype.startswith(("float", "bfloat")):
        return "float32"
    if dtype.startswith(("int", "uint")):
        return "int32"
    return dtype


def plain(dtype: str) -> bool:
    return plain_dtype(dtype) == dtype


def _is_dim_decl(value) -> bool:
    """``n = T.int64()``: a symbolic dim declaration, not a value binding."""
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "T")


def script_bindings(text: str) -> int:
    """Assignments inside function bodies (Relax bindings; TIR statements of a PrimFunc count
    too), without symbolic dim declarations. -1 when the text is not Python."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return -1
    n = 0
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and not _is_dim_decl(node.value):
                n += 1
    return n


def script_functions(text: str) -> int:
    try:
        return sum(isinstance(x, ast.FunctionDef) for x in ast.walk(ast.parse(text)))
    except SyntaxError:
        return 0


def script_params(text: str) -> int:
    try:
        return sum(len(x.args.args) for x in ast.walk(ast.parse(text))
                   if isinstance(x, ast.FunctionDef))
    except SyntaxError:
        return 0


def _text(text: str) -> int:
    """A text measure in which shrinking a dim, making a dtype plain (``plain_dtype``) or
    dropping an attribute all count."""
    ints = sum(min(int(m.group(0)), 1000) for m in _INT.finditer(text))
    return len(text) + ints + 8 * sum(not plain(d) for d in _DTYPE.findall(text))


# The measures of TVMScript text, in size-key order (the IR passes name theirs from these).
MEASURES = {"bindings": script_bindings, "functions": script_functions,
            "params": script_params, "text": _text}
STRUCTURE = ("bindings", "functions", "params")


def script_size_key(text: str) -> tuple:
    return tuple(m(text) for m in MEASURES.values())


def script_smaller(a: str, b: str) -> bool:
    return script_size_key(a) < script_size_key(b)


def script_structure(text: str) -> tuple:
    return tuple(MEASURES[m](text) for m in STRUCTURE)
