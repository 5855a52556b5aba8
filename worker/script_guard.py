"""An allowlist check for user TVMScript, run before any parse.

TVMScript parsing evaluates Python expressions (a type annotation like
``R.Tensor(__import__("os").system("..."))`` runs on parse), so user text is checked here and
then parsed only inside the sandbox. The check is an allowlist over Python's AST: the shapes
of code TVMScript modules use, and nothing that can reach builtins, dunders or the file system.
"""
from __future__ import annotations

import ast
import re
from typing import Optional

# Roots a call or attribute chain may start from: the TVMScript namespaces.
ROOTS = {"R", "T", "I", "tvm", "metadata"}
ALLOWED_IMPORTS = {"tvm", "tvm.script", "tvm.script.ir", "tvm.script.relax", "tvm.script.tir",
                   "tvm.script.tirx", "typing", "numpy"}
ALLOWED_BUILTINS = {"range", "len", "min", "max", "int", "float", "bool", "str", "tuple", "list",
                    "TypeVar", "True", "False", "None"}
ALLOWED_NODES = (
    ast.Module, ast.ClassDef, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AnnAssign, ast.AugAssign, ast.Expr, ast.For, ast.While, ast.If, ast.With, ast.withitem,
    ast.Pass, ast.Assert, ast.Call, ast.keyword, ast.Attribute, ast.Name, ast.Load, ast.Store,
    ast.Constant, ast.Tuple, ast.List, ast.Subscript, ast.Slice, ast.BinOp, ast.UnaryOp,
    ast.BoolOp, ast.Compare, ast.IfExp, ast.operator, ast.unaryop, ast.boolop, ast.cmpop,
    ast.expr_context, ast.Import, ast.ImportFrom, ast.alias, ast.Dict, ast.Starred,
)


_IMPORT = re.compile(r"^(from\s+tvm(\.[\w.]+)?\s+import\s.*|import\s+tvm(\.[\w.]+)?(\s+as\s+\w+)?"
                     r"|from\s+typing\s+import\s.*|import\s+numpy(\s+as\s+\w+)?)\s*$")


def comment_imports(text: str) -> str:
    """TVMScript files start with ``from tvm.script import relax as R``; the parser
    (``tvm.script.from_source``) rejects imports and binds I, R, T itself, so top-level
    imports of tvm, numpy and typing are commented out, as TVM's printer writes them."""
    return "".join("# " + ln if _IMPORT.match(ln.rstrip("\n")) else ln
                   for ln in text.splitlines(keepends=True))


class UnsafeScript(ValueError):
    """The text uses Python outside the TVMScript allowlist; it is not parsed."""


def check_script(text: str) -> None:
    """Raise ``UnsafeScript`` (or SyntaxError for non-Python text) unless ``text`` keeps to the
    allowlist. Nothing in ``text`` is executed."""
    tree = ast.parse(text)
    defined = set(ALLOWED_BUILTINS) | ROOTS
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
    for node in ast.walk(tree):
        where = f"line {getattr(node, 'lineno', '?')}"
        if not isinstance(node, ALLOWED_NODES):
            raise UnsafeScript(f"{where}: {type(node).__name__} is not allowed in TVMScript input")
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name not in ALLOWED_IMPORTS:
                    raise UnsafeScript(f"{where}: import of {a.name} is not allowed")
        if isinstance(node, ast.ImportFrom):
            if node.module not in ALLOWED_IMPORTS:
                raise UnsafeScript(f"{where}: import from {node.module} is not allowed")
        if isinstance(node, ast.Name) and (node.id.startswith("__") or node.id not in defined):
            raise UnsafeScript(f"{where}: name {node.id!r} is not allowed")
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise UnsafeScript(f"{where}: attribute {node.attr!r} is not allowed")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and "__" in node.value:
            raise UnsafeScript(f"{where}: string {node.value[:40]!r} is not allowed")


def user_script_problem(text: str, where: str = "input") -> Optional[str]:
    """Why ``text`` may not be parsed (not Python, or Python outside TVMScript), as one line
    for the user; None when it may (in the sandbox only)."""
    try:
        check_script(text)
    except SyntaxError as e:
        return f"{where} is not TVMScript (Python syntax error, line {e.lineno})"
    except UnsafeScript as e:
        return f"{where} refused: it uses Python outside TVMScript ({e}); nothing in it was run"
    return None
