"""An allowlist check for user TVMScript, run before any parse.

TVMScript parsing evaluates Python: every call, attribute and annotation in the text is
evaluated with ``tvm``, ``I``, ``R``, ``T`` and Python's builtins in scope, a ``lambda`` is
compiled and called, and a string in a Relax shape (``R.Tensor(("n",))``) goes to ``eval``. So
user text is checked here over Python's AST and then parsed only inside the sandbox.

The check allows callables, not namespaces: a call or attribute path must be one of the
builders TVMScript itself has under ``I.``, ``R.`` and ``T.`` (``worker/tvmscript_names.py``,
generated from the installed TVM's ``tvm.script.parser`` namespaces less ``DENY`` below), the
``@I.ir_module`` / ``@R.function`` / ``@T.prim_func`` decorators, a function of the module
(``cls.f``), a local value, or one of a few builtins. Through ``tvm.`` only the
``@tvm.script.ir_module`` decorator and the printer's own ``metadata = tvm.ir.load_json(...)``
line (its JSON limited to IR data) are allowed. Also refused: dunder and underscore
attributes, Python builtins outside ``ALLOWED_BUILTINS``, rebinding ``tvm``/``I``/``R``/``T``,
``lambda`` except as the index map or combiner TVMScript takes, decorators other than the
three, default arguments, comprehensions and f-strings. The strings TVM evaluates (Relax
shapes, T.Buffer shapes) are checked as code, and a Relax shape may hold nothing that could
turn into a string at parse time. Nothing is imported here: the parent need not load TVM.

``python -m worker.script_guard --regenerate`` rewrites the names file from the installed TVM;
tests/test_script_guard.py fails when the file and the installed TVM disagree.
"""
from __future__ import annotations

import ast
import builtins
import json
import re
from pathlib import Path
from typing import Optional

from .tvmscript_names import NAMES, TVM_VERSION

ROOTS = ("I", "R", "T")
ALLOWED_IMPORTS = {"tvm", "tvm.script", "tvm.script.ir", "tvm.script.relax", "tvm.script.tir",
                   "tvm.script.tirx", "tvm.tirx.layout", "typing", "numpy"}
# Builtins a script may name: the parser falls back to Python's builtins for any name it has
# not bound, so every other builtin name (open, eval, getattr, ...) is refused as a value,
# even where the script binds it somewhere (another scope would still see the builtin).
ALLOWED_BUILTINS = {"range", "len", "min", "max", "int", "float", "bool", "str", "tuple", "list",
                    "True", "False", "None"}
_BUILTIN_NAMES = frozenset(dir(builtins))
# What tvm.script's parser binds besides I, R, T (tvm.script.parser.core.entry._default_globals):
# reachable only through the paths allowed below, never rebound by the script.
PARSER_GLOBALS = frozenset({"tvm", "ir", "tir", "relax", "tirx", "Tx", "Axis", "TypeVar"})

# Names in the I/R/T namespaces that reach Python, processes, files or libraries rather than
# building IR; the generator leaves them out and the check names the reason. Decided by reading
# the installed sources (TVM 0.27):
#  * implementation modules re-exported by the namespaces (R.entry, R.parser, R.distributed,
#    T.ir, T.external_kernel, I.parser, ...) are never walked: R.distributed.tvm is all of tvm;
#  * only functions and classes defined in TVM's IR packages are taken (typing, builtins and
#    the IRBuilder machinery that R.dist re-exports are not);
#  * IR that names something to call at run time stays: T.call_packed, T.call_extern,
#    R.call_packed, R.call_pure_packed, R.ExternFunc build IR and run nothing while parsing (the
#    printer writes T.call_packed("tvm.contrib.sort.argsort", ...) itself). This check covers
#    the parse only: T.call_extern("int32", "system", "...") runs a command when the module
#    is built and run.
DENY = {
    "I.pyfunc": "declares a Python function (BasePyModule): Python code, not IR",
    "R.call_py_func": "calls a module's Python function",
    "R.emit_te": "calls a Python callable (a TE compute function) while parsing",
    "R.macro": "defines a macro from a Python function",
    "R.rewriter": "builds a pattern rewriter from Python classes and functions",
    "T.macro": "defines a macro from a Python function",
    "T.inline": "the parser exec()s an inline function's body as Python",
    "T.jit": "evaluates Python annotations and specializes Python functions",
    "T.meta_class": "installs Python classes as metaprogramming hooks",
    "T.call_kernel": "compiles CUDA source, or a file it names, with nvcc/nvrtc while parsing",
    "T.register_script_namespace": "assigns into TVM's Python modules",
}
# Namespaces whose members take free-form modifier chains (T.ptx.mov.b64, T.ptx.add.rn.ftz.f32x2):
# the family must be in NAMES, the modifiers are looked up in a fixed PTX table.
OPEN_CHAINS = {"T": ("ptx",)}

CLASS_DECORATORS = {"I.ir_module", "tvm.script.ir_module"}
FUNCTION_DECORATORS = {"R.function", "T.prim_func"}
# Calls that take a lambda: the printer writes T.index_map(lambda i, j: ...) for an IndexMap and
# T.comm_reducer(lambda x, y: x + y, [...]) for a reducer; R.layout_transform takes index_map=.
LAMBDA_TAKERS = {"T.index_map", "T.comm_reducer", "R.layout_transform"}
# Builders that evaluate strings as Python. Relax eval()s each str in the shape of R.Tensor,
# R.Shape, R.dist.DTensor (relax/script/parser/entry.py _eval_shape), whatever expression made
# it; TIR splices each string literal in a T.Buffer shape of a signature into the AST
# (tirx/script/parser/parser.py ShapeStringRewriter). So a string there is checked as code,
# a Relax shape is a literal tuple/list of ints, strings, names never bound to a string and
# arithmetic on them, and neither builder may be passed around uncalled.
SHAPE_CALLS = {"R.Tensor", "R.Shape", "R.DTensor", "R.dist.DTensor"}
SPLICING_CALLS = {"T.Buffer"}
# Attributes of local values (buffers, vars) the printer writes: A.data, A.strides[0],
# A.elem_offset; and the one method it calls on them, A.view(4, 4) / A.view("int32").
LOCAL_ATTRS = {"data", "strides", "elem_offset"}
LOCAL_METHODS = {"view"}
# Type keys the printer's metadata JSON may hold: IR data. tvm.ir.load_json builds any
# registered type; ir.EnvFunc names a global function and ffi.Module deserializes a library.
METADATA_TYPES = {"None", "bool", "int", "float", "DataType", "Device", "ffi.String",
                  "ffi.Bytes", "ffi.Array", "ffi.List", "ffi.Map", "ffi.Dict", "ffi.Shape",
                  "ffi.Tensor"}
METADATA_PREFIXES = ("ir.", "relax.", "tirx.", "s_tir.")
METADATA_DENY = {"ir.EnvFunc"}

ALLOWED_NODES = (
    ast.Module, ast.ClassDef, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.Assign,
    ast.AnnAssign, ast.AugAssign, ast.Expr, ast.For, ast.While, ast.If, ast.With, ast.withitem,
    ast.Pass, ast.Assert, ast.Break, ast.Continue, ast.Call, ast.keyword, ast.Attribute,
    ast.Name, ast.Load, ast.Store, ast.Constant, ast.Tuple, ast.List, ast.Dict, ast.Subscript,
    ast.Slice, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Starred,
    ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.expr_context, ast.Import,
    ast.ImportFrom, ast.alias,
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


def _dotted(node) -> tuple[Optional[ast.expr], list]:
    """(base, attribute names) of ``a.b.c``: (Name a, ["b", "c"])."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return node, parts[::-1]


def _path(node) -> Optional[str]:
    """``"R.nn.conv2d"`` for a dotted name, else None."""
    base, parts = _dotted(node)
    return ".".join([base.id] + parts) if isinstance(base, ast.Name) else None


def root_path_allowed(root: str, parts: list) -> bool:
    """Whether ``root.parts`` is a TVMScript builder of the names file."""
    names = NAMES.get(root, frozenset())
    if ".".join(parts) in names:
        return True
    return (len(parts) >= 2 and parts[0] in OPEN_CHAINS.get(root, ())
            and f"{parts[0]}.{parts[1]}" in names)


class _Checker:
    def __init__(self, tree: ast.Module):
        self.line = 1
        # The module classes, their aliases (cls = Module) and the functions they define.
        self.modules = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        self.functions = set()
        for c in ast.walk(tree):
            if isinstance(c, ast.ClassDef):
                for s in c.body:
                    if isinstance(s, ast.FunctionDef):
                        self.functions.add(s.name)
                    elif isinstance(s, ast.Assign):
                        self.functions |= {t.id for t in s.targets if isinstance(t, ast.Name)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) \
                    and n.value.id in self.modules:
                self.modules |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        self.stringy = self._stringy_names(tree)

    @staticmethod
    def _stringy_names(tree) -> set:
        """Names some binding of which may hold a Python str (or a container of them): bound
        from a string literal, from anything computed with one, or from another such name.
        Scope-blind, to a fixpoint; ``metadata`` holds strings."""
        bindings = []          # (target names, value expression)

        def names(t):
            if isinstance(t, ast.Name):
                return [t.id]
            if isinstance(t, (ast.Tuple, ast.List)):
                return [n for e in t.elts for n in names(e)]
            if isinstance(t, ast.Starred):
                return names(t.value)
            return []

        for n in ast.walk(tree):
            if isinstance(n, ast.Assign):
                bindings += [(names(t), n.value) for t in n.targets]
            elif isinstance(n, (ast.AnnAssign, ast.AugAssign)) and n.value is not None:
                bindings.append((names(n.target), n.value))
            elif isinstance(n, ast.For):
                bindings.append((names(n.target), n.iter))
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                bindings.append((names(n.optional_vars), n.context_expr))
        # A binding may hold a str when its value (outside ``TypeVar("n")`` calls, which bind
        # a TypeVar) has a str or bytes literal or the name ``str`` in it, or a name that may.
        # Propagated along a worklist from the names each value mentions: linear in the
        # module (a fixpoint re-reading every binding per new name was quadratic, minutes
        # for a module of 20,000 bindings).
        def scan(e) -> tuple[bool, set]:
            direct, used, todo = False, set(), [e]
            while todo:
                x = todo.pop()
                if isinstance(x, ast.Constant):
                    direct = direct or isinstance(x.value, (str, bytes))
                elif isinstance(x, ast.Name):
                    if x.id == "str":
                        direct = True
                    used.add(x.id)
                elif isinstance(x, ast.Call) and isinstance(x.func, ast.Name) \
                        and x.func.id == "TypeVar":
                    continue
                else:
                    todo.extend(ast.iter_child_nodes(x))
            return direct, used

        users: dict = {}        # name -> bindings whose value mentions it
        stringy: set = set()
        queue = ["metadata"]
        fired = [False] * len(bindings)
        for k, (targets, value) in enumerate(bindings):
            direct, used = scan(value)
            for n in used:
                users.setdefault(n, []).append(k)
            if direct:
                fired[k] = True
                queue += targets
        while queue:
            n = queue.pop()
            if n in stringy:
                continue
            stringy.add(n)
            for k in users.get(n, ()):
                if not fired[k]:
                    fired[k] = True
                    queue += bindings[k][0]
        return stringy

    # --- reporting -----------------------------------------------------------------------
    def fail(self, node, msg: str):
        line = getattr(node, "lineno", None) or self.line
        raise UnsafeScript(f"line {line}: {msg}")

    # --- dispatch ------------------------------------------------------------------------
    def visit(self, node):
        if getattr(node, "lineno", None):
            self.line = node.lineno
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is not None:
            return method(node)
        return self.generic(node)

    def generic(self, node):
        if not isinstance(node, ALLOWED_NODES):
            self.fail(node, f"{type(node).__name__} is not allowed in TVMScript input")
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    # --- module level --------------------------------------------------------------------
    def visit_Module(self, node: ast.Module):
        for stmt in node.body:
            if self._is_metadata(stmt):
                self.line = stmt.lineno
                self._check_metadata(stmt)
            else:
                self.visit(stmt)

    @staticmethod
    def _is_metadata(stmt) -> bool:
        return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "metadata"
                and isinstance(stmt.value, ast.Call)
                and _path(stmt.value.func) == "tvm.ir.load_json")

    def _check_metadata(self, stmt: ast.Assign):
        """``metadata = tvm.ir.load_json(<JSON>)`` as the printer writes it (show_meta=True):
        one literal string, whose objects are IR data only."""
        call = stmt.value
        if call.keywords or len(call.args) != 1 or not isinstance(call.args[0], ast.Constant) \
                or not isinstance(call.args[0].value, str):
            self.fail(stmt, "tvm.ir.load_json takes one literal JSON string here")
        try:
            graph = json.loads(call.args[0].value)
            nodes = graph["nodes"]
            types = {n["type"] for n in nodes}
        except (ValueError, KeyError, TypeError):
            self.fail(stmt, "metadata is not a TVM JSON object graph")
        for t in sorted(types):
            if not isinstance(t, str) or t in METADATA_DENY or not (
                    t in METADATA_TYPES or t.startswith(METADATA_PREFIXES)):
                self.fail(stmt, f"metadata holds a {str(t)[:40]!r} object; only IR data is allowed")

    def visit_Import(self, node):
        for a in node.names:
            if a.name not in ALLOWED_IMPORTS:
                self.fail(node, f"import of {a.name} is not allowed")

    def visit_ImportFrom(self, node):
        if node.module not in ALLOWED_IMPORTS:
            self.fail(node, f"import from {node.module} is not allowed")

    def _bind(self, node, name: str):
        if name.startswith("__"):
            self.fail(node, f"name {name!r} is not allowed")
        if name in ROOTS or name in PARSER_GLOBALS or name == "metadata":
            self.fail(node, f"{name!r} may not be rebound")

    def _decorator(self, node, deco, allowed: set):
        call = deco if isinstance(deco, ast.Call) else None
        path = _path(call.func if call else deco)
        if path not in allowed:
            self.fail(deco, f"decorator {path or type(deco).__name__} is not allowed "
                            f"(only @{', @'.join(sorted(allowed))})")
        if call:
            for kw in call.keywords:
                if kw.arg is None or not isinstance(kw.value, ast.Constant):
                    self.fail(deco, f"@{path}(...) takes literal keyword arguments only")
            if call.args:
                self.fail(deco, f"@{path}(...) takes literal keyword arguments only")

    def visit_ClassDef(self, node: ast.ClassDef):
        self._bind(node, node.name)
        if len(node.decorator_list) != 1:
            self.fail(node, "a class must be decorated with @I.ir_module, and only with it")
        self._decorator(node, node.decorator_list[0], CLASS_DECORATORS)
        if node.bases or node.keywords:
            self.fail(node, "an ir_module class may not have bases or keywords")
        for stmt in node.body:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef):
        self._bind(node, node.name)
        if len(node.decorator_list) != 1:
            self.fail(node, "a function must be decorated with @R.function or @T.prim_func, "
                            "and only with it")
        self._decorator(node, node.decorator_list[0], FUNCTION_DECORATORS)
        self._arguments(node.args, "function")
        if node.returns is not None:
            self._annotation(node.returns)
        for stmt in node.body:
            self.visit(stmt)

    def _arguments(self, args: ast.arguments, what: str):
        if args.defaults or any(d is not None for d in args.kw_defaults):
            self.fail(args, f"default argument values are not allowed ({what})")
        if args.kwarg is not None or args.kwonlyargs or (what == "function" and args.vararg):
            self.fail(args, f"*args, **kwargs and keyword-only arguments are not allowed ({what})")
        for a in args.posonlyargs + args.args + ([args.vararg] if args.vararg else []):
            self.line = getattr(a, "lineno", self.line)
            self._bind(a, a.arg)
            if a.annotation is not None:
                if what == "lambda":
                    self.fail(a, "lambda arguments take no annotations")
                self._annotation(a.annotation)

    def visit_Lambda(self, node):
        self.fail(node, "lambda is allowed only as the index map or combiner of "
                        f"{', '.join(sorted(LAMBDA_TAKERS))}")

    def _lambda(self, node: ast.Lambda):
        self._arguments(node.args, "lambda")
        self.visit(node.body)

    # --- statements ----------------------------------------------------------------------
    def _target(self, node):
        if isinstance(node, ast.Name):
            self._bind(node, node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for e in node.elts:
                self._target(e)
        elif isinstance(node, ast.Starred):
            self._target(node.value)
        elif isinstance(node, ast.Subscript):
            self.visit(node.value)
            self.visit(node.slice)
        else:
            self.fail(node, f"assigning to {type(node).__name__} is not allowed")

    def visit_Assign(self, node):
        for t in node.targets:
            self._target(t)
        self.visit(node.value)

    def visit_AnnAssign(self, node):
        self._target(node.target)
        self._annotation(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def visit_AugAssign(self, node):
        self._target(node.target)
        self.visit(node.value)

    def visit_For(self, node):
        self._target(node.target)
        self.visit(node.iter)
        for s in node.body + node.orelse:
            self.visit(s)

    def visit_withitem(self, node):
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self._target(node.optional_vars)

    # --- expressions ---------------------------------------------------------------------
    def visit_Name(self, node: ast.Name):
        if not isinstance(node.ctx, ast.Load):
            self._bind(node, node.id)
            return
        n = node.id
        if n.startswith("__"):
            self.fail(node, f"name {n!r} is not allowed")
        if n in ROOTS or n in PARSER_GLOBALS:
            self.fail(node, f"{n!r} may only start a TVMScript path such as {n}.<builder>"
                      if n in ROOTS else f"name {n!r} is not allowed")
        if n in _BUILTIN_NAMES and n not in ALLOWED_BUILTINS:
            self.fail(node, f"name {n!r} is a Python builtin outside TVMScript")

    def _chain(self, node: ast.Attribute) -> str:
        """Check a dotted path; its kind: "builder", "function" (cls.f) or "local"."""
        base, parts = _dotted(node)
        for p in parts:
            if p.startswith("_"):
                self.fail(node, f"attribute {p!r} is not allowed")
        if not isinstance(base, ast.Name):
            self.fail(node, f"attribute {parts[0]!r} of a computed value is not allowed")
        path = ".".join([base.id] + parts)
        if base.id in ROOTS:
            if path in DENY:
                self.fail(node, f"{path} is refused: {DENY[path]}")
            if not root_path_allowed(base.id, parts):
                self.fail(node, f"{path} is not a TVMScript builder of TVM {TVM_VERSION}")
            return "builder"
        if base.id == "tvm":
            self.fail(node, f"{path} is not allowed: through tvm. only the @tvm.script.ir_module "
                            "decorator and the printer's metadata = tvm.ir.load_json(...) are")
        if base.id in self.modules and len(parts) == 1 and parts[0] in self.functions:
            return "function"
        self.visit(base)       # a local value: the name rules apply to it
        if len(parts) == 1 and (parts[0] in LOCAL_ATTRS or parts[0] in LOCAL_METHODS):
            return "local"
        allowed = ", .".join(sorted(LOCAL_ATTRS | LOCAL_METHODS))
        self.fail(node, f"attribute .{'.'.join(parts)} of {base.id!r} is not allowed "
                        f"(only .{allowed} of local values)")

    def visit_Attribute(self, node: ast.Attribute):
        """An attribute path used as a value (not called, subscripted or annotating)."""
        if not isinstance(node.ctx, ast.Load):
            self.fail(node, "assigning to an attribute is not allowed")
        self._chain(node)
        path = _path(node)
        if path in SHAPE_CALLS or path in SPLICING_CALLS:
            self.fail(node, f"{path} may only be called here (it evaluates strings as Python)")

    def visit_Subscript(self, node: ast.Subscript):
        if isinstance(node.value, ast.Attribute):
            self._chain(node.value)            # T.Buffer[...], T.let[...]
        else:
            self.visit(node.value)
        self.visit(node.slice)

    def _annotation(self, node):
        if isinstance(node, ast.Attribute):
            self._chain(node)                  # x: R.Tensor, n: T.int32
        else:
            self.visit(node)

    def visit_Call(self, node: ast.Call):
        func = node.func
        path = None
        if isinstance(func, ast.Attribute):
            kind = self._chain(func)
            path = _path(func)
            if kind == "local" and func.attr not in LOCAL_METHODS:
                self.fail(node, f"calling .{func.attr} of a local value is not allowed")
        elif isinstance(func, ast.Name) and func.id == "TypeVar":
            # n = TypeVar("n"): how the printer declares a symbolic shape variable
            if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Constant) \
                    or not isinstance(node.args[0].value, str):
                self.fail(node, "TypeVar takes one literal name here")
        elif isinstance(func, ast.Name):
            self.visit(func)
        else:
            self.fail(node, f"calling a {type(func).__name__} is not allowed")
        if path in SHAPE_CALLS or path in SPLICING_CALLS:
            if any(isinstance(a, ast.Starred) for a in node.args) or \
                    any(kw.arg is None for kw in node.keywords):
                self.fail(node, f"{path} takes no *args or **kwargs here")
            shape = node.args[0] if node.args else next(
                (kw.value for kw in node.keywords if kw.arg in ("shape", "values")), None)
            if shape is not None:
                if path in SHAPE_CALLS:
                    self._relax_shape(shape, path)
                else:
                    for c in ast.walk(shape):
                        if isinstance(c, ast.Constant) and isinstance(c.value, str):
                            self._code_string(c)
        for a in node.args:
            self._argument(a, path)
        for kw in node.keywords:
            self._argument(kw.value, path)

    def _relax_shape(self, shape, path: str):
        """The shape of a SHAPE_CALLS call: no value in it may turn out a str at parse time,
        except literal strings, which are checked as the code they are."""
        if isinstance(shape, ast.Constant):
            if isinstance(shape.value, str):       # R.Tensor("float32"): the dtype
                self._code_string(shape)
            return
        if isinstance(shape, ast.Name):
            if shape.id in self.stringy:
                self.fail(shape, f"the shape of {path} is {shape.id!r}, which may hold a string")
            return
        if not isinstance(shape, (ast.Tuple, ast.List)):
            self.fail(shape, f"the shape of {path} must be a literal tuple or list")
        for e in shape.elts:
            self._shape_element(e, path)

    def _shape_element(self, e, path: str):
        if isinstance(e, ast.Constant):
            if isinstance(e.value, str):
                self._code_string(e)
            return
        if isinstance(e, ast.Name):
            if e.id in self.stringy:
                self.fail(e, f"{e.id!r} may hold a string, which {path} would evaluate as Python")
            return
        if isinstance(e, ast.BinOp):
            self._shape_element(e.left, path)
            self._shape_element(e.right, path)
            return
        if isinstance(e, ast.UnaryOp):
            self._shape_element(e.operand, path)
            return
        if isinstance(e, ast.Call) and (_path(e.func) or "").startswith("T."):
            for a in list(e.args) + [kw.value for kw in e.keywords]:
                self._shape_element(a, path)
            return
        self.fail(e, f"a {type(e).__name__} in the shape of {path} is not allowed "
                     "(ints, strings, names, T. builders and arithmetic are)")

    def _argument(self, a, path):
        if isinstance(a, ast.Lambda) and path in LAMBDA_TAKERS:
            self._lambda(a)
        else:
            self.visit(a)

    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, str) and "__" in node.value:
            self.fail(node, f"string {node.value[:40]!r} is not allowed")

    def _code_string(self, node: ast.Constant):
        """A string TVM evaluates as Python: it must pass the check as code."""
        try:
            expr = ast.parse(node.value.strip(), mode="eval")
        except (SyntaxError, ValueError):
            return              # not Python: TVM's eval or splice fails before running anything
        for n in ast.walk(expr):
            n.lineno = node.lineno
        try:
            self.visit(expr.body)
        except UnsafeScript as e:
            raise UnsafeScript(f"{e} (in the string {node.value[:40]!r}, which TVM evaluates)")


def check_script(text: str) -> None:
    """Raise ``UnsafeScript`` (or SyntaxError for non-Python text) unless ``text`` keeps to the
    allowlist. Nothing in ``text`` is executed."""
    tree = ast.parse(text)
    _Checker(tree).visit(tree)


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


# --- the names file ------------------------------------------------------------------------
NAMES_FILE = Path(__file__).with_name("tvmscript_names.py")
# Where a namespace member may come from to be taken: TVM's IR packages. A member from anywhere
# else (typing, builtins, tvm.runtime.module, tvm.contrib) is left out whatever its name.
_TRUSTED_ORIGINS = ("tvm.relax.op", "tvm.relax.script", "tvm.relax.expr", "tvm.relax.distributed",
                    "tvm.tirx", "tvm.ir", "tvm.script", "tvm.backend", "tvm.runtime._tensor",
                    "tvm_ffi._tensor", "tvm.target.codegen")
# Submodules walked for dotted builders (R.nn.conv2d): Relax's op packages, and R.dist for the
# distributed types; each with the origins its members may have.
_WALKED_MODULES = {"R.dist": ("tvm.relax.script.parser.dist",
                              "tvm.relax.script.builder.distributed", "tvm.relax.op",
                              "tvm.relax.distributed.global_info")}


def introspect_names() -> dict:
    """{root: sorted dotted names} from the installed TVM's TVMScript namespaces, less DENY.
    Imports TVM: for the regeneration command and the test that compares, not for checks."""
    import functools
    import inspect
    import types

    from tvm.script import parser as P

    namespaces = {"I": P.ir, "R": P.relax, "T": getattr(P, "tirx", None) or P.tir}

    def origin(v) -> str:
        if isinstance(v, functools.partial):
            return origin(v.func)
        if inspect.isfunction(v) or inspect.isclass(v) or inspect.isbuiltin(v):
            return getattr(v, "__module__", "") or ""
        return type(v).__module__

    def is_namespace(v) -> bool:       # T.cuda, T.ptx, T.nki, ...: instances grouping builders
        return (not inspect.isclass(v) and type(v).__name__.endswith("Namespace")
                and type(v).__module__.startswith("tvm."))

    def is_static_class(v) -> bool:    # T.axis: a class of static builders
        own = {k: x for k, x in vars(v).items() if not k.startswith("_")} \
            if inspect.isclass(v) else {}
        return bool(own) and all(isinstance(x, staticmethod) for x in own.values())

    def walk(obj, path, origins, depth, out):
        for name in dir(obj):
            if name.startswith("_"):
                continue
            full = f"{path}.{name}"
            if full in DENY:
                continue
            try:
                v = getattr(obj, name)
            except Exception:  # noqa: BLE001 - a lazy attribute that fails is not a builder
                continue
            if isinstance(v, types.ModuleType):
                if depth == 0 and v.__name__.startswith("tvm.relax.op."):
                    walk(v, full, ("tvm.relax.op",), depth + 1, out)
                elif full in _WALKED_MODULES:
                    walk(v, full, _WALKED_MODULES[full], depth + 1, out)
                continue
            if is_namespace(v):
                out.add(full.split(".", 1)[1])
                if depth < 3:
                    walk(v, full, ("tvm.",), depth + 1, out)
                continue
            if not origin(v).startswith(origins):
                continue
            out.add(full.split(".", 1)[1])
            if is_static_class(v):
                out |= {f"{full.split('.', 1)[1]}.{k}" for k in vars(v) if not k.startswith("_")}

    names = {}
    for root, ns in namespaces.items():
        out: set = set()
        walk(ns, root, _TRUSTED_ORIGINS, 0, out)
        names[root] = sorted(out)
    return names


def render_names_file(names: dict, version: str) -> str:
    lines = ['"""TVMScript builder names per namespace root, as `worker.script_guard` allows them.',
             "",
             f"Generated by `python -m worker.script_guard --regenerate` from TVM {version}'s",
             "tvm.script.parser namespaces (ir, relax, tirx) less script_guard.DENY: do not edit;",
             'tests/test_script_guard.py compares it with the installed TVM."""',
             "",
             f"TVM_VERSION = {version!r}",
             "",
             "NAMES = {"]
    for root in sorted(names):
        lines.append(f"    {root!r}: frozenset({{")
        for n in names[root]:
            lines.append(f"        {n!r},")
        lines.append("    }),")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _main(argv=None):
    import argparse

    ap = argparse.ArgumentParser(prog="python -m worker.script_guard",
                                 description="The TVMScript allowlist's names file.")
    ap.add_argument("--regenerate", action="store_true",
                    help=f"rewrite {NAMES_FILE.name} from the installed TVM")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the names file differs from the installed TVM")
    a = ap.parse_args(argv)
    import tvm

    text = render_names_file(introspect_names(), tvm.__version__)
    if a.regenerate:
        NAMES_FILE.write_text(text)
        print(f"wrote {NAMES_FILE} ({sum(1 for ln in text.splitlines() if ln.startswith(' ' * 8))}"
              f" names, TVM {tvm.__version__})")
        return 0
    same = NAMES_FILE.read_text() == text
    print(f"{NAMES_FILE.name} {'matches' if same else 'differs from'} TVM {tvm.__version__}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(_main())
