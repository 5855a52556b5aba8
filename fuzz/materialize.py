"""The one seam between the program model and TVM's Python API.

``materialize(program)`` builds the IRModule for the installed TVM; ``to_script`` prints it.
Every other module works on the program model, so supporting another TVM release means
teaching this module (and only this module) that release's spelling of the API; the
spellings themselves (0.25's ``TensorStructInfo``, ...) are detected in ``fuzz.compat``.
"""
from __future__ import annotations

import ast
import functools
from typing import Any, Callable, Optional

import numpy as np

from . import compat
from . import dims as D
from .catalogue import CATALOGUE
from .catalogue.spec import ConstArg, PrimArg, ShapeArg, TupleArg, np_dtype
from .model import Function, Program, TensorTy, TupleTy, Ty, ty_from_json


class MaterializeError(Exception):
    """The program model could not be turned into an IRModule (a generator defect)."""


class PrimFuncRefused(Exception):
    """TVM's parser refused the PrimFunc a ``call_tir`` node holds (``fuzz.tir.render``'s
    text): as for a TIR case, a known TVM defect (``fuzz.tir.build.known_bug``) makes it a
    finding, anything else the generator's mistake (``worker.execute``)."""

    def __init__(self, node, error: BaseException):
        from .tir.build import first_line

        super().__init__(first_line(error))
        self.node, self.error = node, error


class InferenceMismatch(Exception):
    """TVM inferred a type for an op's result that its numpy semantics (the catalogue's shape
    rule) do not give. In a valid program that is TVM's bug (bug class 2), caught where the
    wrong type is made: left alone, it surfaces later as a consumer refusing its operands,
    which would blame the consumer, or the generator."""

    def __init__(self, op: str, node: str, problem: str, rule: Ty, tvms: Ty):
        # First line: the signature's (rank-free); then both whole types for the report.
        super().__init__(f"{op} infers the wrong {problem}\n{node}: TVM infers "
                         f"{_ty_text(tvms)}, numpy semantics give {_ty_text(rule)}")
        self.op, self.node = op, node
        self.func = ""   # the function holding the node; set by materialize


@functools.lru_cache(maxsize=None)
def _tvm():
    import tvm
    from tvm import relax, tirx

    return tvm, relax, tirx


def tvm_version() -> str:
    return _tvm()[0].__version__


class _Scope:
    """Symbolic variables of one function: one tirx.Var per name."""

    def __init__(self):
        self.vars: dict[str, Any] = {}

    def var(self, name: str):
        _, _, tirx = _tvm()
        if name not in self.vars:
            self.vars[name] = tirx.Var(name, "int64")
        return self.vars[name]

    def dim(self, d: D.Dim):
        _, _, tirx = _tvm()
        if isinstance(d, int):
            return tirx.IntImm("int64", d)

        def conv(n):
            if isinstance(n, ast.Constant):
                return tirx.IntImm("int64", n.value)
            if isinstance(n, ast.Name):
                return self.var(n.id)
            if isinstance(n, ast.UnaryOp):
                return tirx.IntImm("int64", 0) - conv(n.operand)
            a, b = conv(n.left), conv(n.right)
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.FloorDiv):
                return tirx.floordiv(a, b)
            return tirx.floormod(a, b)

        return conv(D.parse(d))

    def sinfo(self, ty: Ty):
        if isinstance(ty, TupleTy):
            return compat.tuple_type([self.sinfo(f) for f in ty.fields])
        dtype = ty.dtype or None
        if ty.shape is None:
            return compat.tensor_type(None, dtype, ndim=ty.ndim)
        return compat.tensor_type([self.dim(d) for d in ty.shape], dtype)


def _arg(scope: _Scope, a):
    """Turn a catalogue marker (or a plain value) into what the relax.op builder takes."""
    _, relax, _ = _tvm()
    if isinstance(a, ShapeArg):
        return [scope.dim(d) for d in a.dims]
    if isinstance(a, ConstArg):
        return relax.const(np.array(a.value, dtype=np_dtype(a.dtype)), a.dtype)
    if isinstance(a, TupleArg):
        return relax.Tuple([_arg(scope, x) for x in a.items])
    if isinstance(a, PrimArg):
        v = a.value
        if isinstance(v, str):
            return compat.prim_value(scope.dim(v))
        tirx = _tvm()[2]
        imm = tirx.FloatImm if isinstance(v, float) else tirx.IntImm
        return compat.prim_value(imm(a.dtype, v))
    if isinstance(a, list):
        return [_arg(scope, x) for x in a]
    return a


def _builder(path: str):
    _, relax, _ = _tvm()
    obj = relax.op
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def op_expr(op: str, args: list, attrs: dict, scope: _Scope):
    spec = CATALOGUE[op]
    pos, kw = spec.call(list(args), dict(attrs))
    pos = [_arg(scope, a) for a in pos]
    kw = {k: _arg(scope, v) for k, v in kw.items()}
    return _builder(spec.builder)(*pos, **kw)


def _node_expr(node, env: dict, scope: _Scope, gvars: dict, bb):
    _, relax, _ = _tvm()
    args = [env[a] for a in node.args]
    if node.op == "tuple":
        return relax.Tuple(args)
    if node.op == "get_item":
        return relax.TupleGetItem(args[0], int(node.attrs["index"]))
    if node.op == "call":
        return relax.Call(gvars[node.attrs["func"]], args)
    if node.op == "const":
        t = ty_from_json(node.attrs["ty"])
        shape = [int(d) for d in t.shape]
        return relax.const(np.full(shape, node.attrs["value"], dtype=np_dtype(t.dtype)), t.dtype)
    if node.op in CATALOGUE:
        return op_expr(node.op, args, node.attrs, scope)
    raise MaterializeError(f"unknown op {node.op!r} in node {node.name}")


def _build_function(bb, f: Function, gvars: dict, private: bool, check_types: bool = False,
                    program: Optional[Program] = None, declared=None):
    """Emit ``f``; ``declared``: the GlobalVar a recursive function was declared under before
    its body could be built (its calls to itself name it)."""
    _, relax, _ = _tvm()
    scope = _Scope()
    params = [relax.Var(p.name, scope.sinfo(p.ty)) for p in f.params]
    env: dict[str, Any] = {p.name: v for p, v in zip(f.params, params)}
    # A value defined in a dataflow block and used after it must be a block output.
    used_later: set[str] = {f.ret}
    for i, b in enumerate(f.blocks):
        for later in f.blocks[i + 1:]:
            for n in later.nodes:
                used_later.update(n.args)
    name = f.name if declared is None else f.name + "__body"
    with bb.function(name, params, private=private):
        for block in f.blocks:
            if block.dataflow:
                with bb.dataflow():
                    outs = _emit_block(bb, block, env, scope, gvars, used_later, check_types,
                                       program)
                    for n in outs:
                        env[n] = bb.emit_output(env[n], name_hint=n)
            else:
                _emit_block(bb, block, env, scope, gvars, used_later, check_types, program)
        gv = bb.emit_func_output(env[f.ret])
    if f.ret_annot is not None or declared is not None:
        # The declared return type, written as TVMScript's ``-> R.Tensor(...)`` writes it
        # (a near-valid mutant's may disagree with the body's); a recursive function keeps
        # the type it was declared with.
        built = bb.get()[gv]
        ret = scope.sinfo(f.ret_annot) if f.ret_annot is not None else None
        func = relax.Function(built.params, built.body, ret, is_pure=True, attrs=built.attrs)
        bb.update_func(declared if declared is not None else gv, func)
    return gv


def _declare(bb, f: Function, private: bool):
    """A GlobalVar for a function called before its body exists (recursion): an empty
    function of its signature, replaced once the body is built."""
    _, relax, _ = _tvm()
    scope = _Scope()
    params = [relax.Var(p.name, scope.sinfo(p.ty)) for p in f.params]
    ret = f.ret_annot or f.value_types()[f.ret]
    empty = relax.Function.create_empty(params, scope.sinfo(ret))
    if not private:
        empty = empty.with_attr("global_symbol", f.name)
    return bb.add_func(empty, f.name)


def _emit_if(bb, node, env, scope, gvars, check_types, program):
    """``R.If(cond, then, else)``: each branch function's nodes emitted as the bindings of
    its SeqExpr, its parameters bound to the ``if`` node's arguments."""
    _, relax, _ = _tvm()
    if program is None:
        raise MaterializeError(f"if node {node.name} outside a program")
    cond = env[node.args[0]]
    bodies = []
    for branch in program.branches(node):
        if len(branch.params) != len(node.args) - 1:
            raise MaterializeError(f"if node {node.name}: {branch.name} takes "
                                   f"{len(branch.params)} values, given {len(node.args) - 1}")
        benv = dict(env)
        benv.update({p.name: env[a] for p, a in zip(branch.params, node.args[1:])})
        bb._begin_binding_block()
        for block in branch.blocks:
            plain = type(block)(False, block.nodes)
            _emit_block(bb, plain, benv, scope, gvars, set(), check_types, program)
        blk = bb._end_block()
        bodies.append(relax.SeqExpr([blk] if len(blk.bindings) else [], benv[branch.ret]))
    return relax.If(cond, bodies[0], bodies[1])


DPS_COPY = "runtime.TVMTensorCopyFromTo"   # registered by the TVM runtime: (from, to)


def prim_func_text(node) -> str:
    """TVMScript of a call_tir node's PrimFunc (``fuzz.tir.render``, which validates every
    name, dtype and number of the case before the parser evaluates the text)."""
    from .calltir import prim_of
    from .tir.render import to_tvmscript

    return to_tvmscript(prim_of(node), axis_separators_ok=compat.has_axis_separators())


def _out_sinfo(ty: Ty, scope: _Scope):
    """call_tir's output type: one tensor's, or the list of a tuple's fields'."""
    if isinstance(ty, TupleTy):
        return [scope.sinfo(f) for f in ty.fields]
    return scope.sinfo(ty)


def _call_tir(bb, node, env, scope):
    """``R.call_tir(tir_<node>, (args...), out_sinfo)``, the PrimFunc added to the module."""
    _, relax, _ = _tvm()
    from .calltir import func_name

    text = prim_func_text(node)
    try:
        func = from_script(text)
    except Exception as e:  # noqa: BLE001 - the parser's refusal, judged by the caller
        raise PrimFuncRefused(node, e) from e
    gv = bb.add_func(func, func_name(node))
    return compat.call_tir(gv, relax.Tuple([env[a] for a in node.args]),
                           _out_sinfo(node.ty, scope))


# Called with each node's op before it is built (or None): the sandbox leaves it as a
# breadcrumb, so a segfault while the module is constructed names the op that caused it.
on_node: Optional[Callable[[str], None]] = None


def _emit_block(bb, block, env, scope, gvars, used_later, check_types=False,
                program: Optional[Program] = None) -> list[str]:
    _, relax, _ = _tvm()
    outs = []
    for node in block.nodes:
        if on_node is not None:
            on_node(node.op)
        if node.op == "match_cast":
            t = ty_from_json(node.attrs["ty"])
            env[node.name] = bb.match_cast(env[node.args[0]], scope.sinfo(t), name_hint=node.name)
        elif node.op == "dyn_slice":
            # R.Tensor(ndim=n): the extents are the run's; matched to the node's type
            sliced = bb.emit(relax.op.dynamic_strided_slice(*[env[a] for a in node.args]),
                             name_hint=node.name + "_s")
            env[node.name] = bb.match_cast(sliced, scope.sinfo(node.ty), name_hint=node.name)
        else:
            if node.op == "if":
                expr = _emit_if(bb, node, env, scope, gvars, check_types, program)
            elif node.op == "dps_copy":
                expr = relax.call_dps_packed(DPS_COPY, [env[node.args[0]]],
                                             scope.sinfo(node.ty))
            elif node.op == "call_tir":
                expr = _call_tir(bb, node, env, scope)
            elif node.op == "shape_tensor":
                shape = bb.emit(relax.op.shape_of(env[node.args[0]]), name_hint=node.name + "_s")
                expr = relax.op.shape_to_tensor(shape)
            elif node.op == "reshape_dyn":
                shape = bb.emit(relax.op.tensor_to_shape(env[node.args[1]]),
                                name_hint=node.name + "_s")
                dims = [scope.var(d) for d in node.attrs["dims"]]
                bb.match_cast(shape, compat.shape_type(dims), name_hint=node.name + "_m")
                # The dims the match_cast defined, as TVMScript writes it: R.shape([d1, d2])
                # (LegalizeOps' reshape asserts a ShapeExpr; the shape variable itself fails)
                expr = relax.op.reshape(env[node.args[0]], relax.ShapeExpr(dims))
            else:
                expr = _node_expr(node, env, scope, gvars, bb)
            if node.annot is not None:
                # An explicit annotation, kept even where it disagrees with inference.
                expr = bb.normalize(expr)
                cls = relax.DataflowVar if block.dataflow else relax.Var
                var = cls(node.name, scope.sinfo(node.annot))
                bb.emit_normalized(relax.VarBinding(var, expr))
                env[node.name] = var
            else:
                env[node.name] = bb.emit(expr, name_hint=node.name)
                if check_types and node.op in CATALOGUE and node.ty is not None:
                    _check_inferred(node, env[node.name])
        if block.dataflow and node.name in used_later:
            outs.append(node.name)
    return outs


def materialize(program: Program, check_types: bool = False):
    """Build the IRModule for ``program`` (functions other than the entry are private).
    ``check_types``: raise InferenceMismatch where TVM's inferred type of an op's result
    disagrees with the catalogue's shape rule (valid programs only: a mutant's may)."""
    tvm, relax, _ = _tvm()
    bb = relax.BlockBuilder()
    gvars: dict[str, Any] = {}
    # Callees first, so calls can name their GlobalVar; a recursive function is declared
    # first (its signature) and its body built after.
    order = [f for f in program.functions if f.name != program.entry] + [program.main]
    order, recursive = _call_order(program, order)
    for f in order:
        if f.name in recursive:
            gvars[f.name] = _declare(bb, f, private=f.name != program.entry)
    temps = []
    for f in order:
        try:
            gv = _build_function(bb, f, gvars, private=f.name != program.entry,
                                 check_types=check_types, program=program,
                                 declared=gvars.get(f.name) if f.name in recursive else None)
        except InferenceMismatch as e:
            e.func = f.name
            raise
        if f.name in recursive:
            temps.append(gv)
        else:
            gvars[f.name] = gv
    mod = bb.get()
    if temps:
        mod = tvm.IRModule({gv: fn for gv, fn in mod.functions.items() if gv not in temps},
                           attrs=mod.attrs)
    return mod


def _check_inferred(node, var) -> None:
    try:
        tvms = sinfo_to_ty(compat.type_of(var))
    except MaterializeError:
        return   # a dim expression the model cannot spell: nothing to compare
    problem = type_disagreement(node.ty, tvms)
    if problem:
        raise InferenceMismatch(node.op, node.name, problem, node.ty, tvms)


def type_disagreement(rule: Ty, tvms: Ty) -> str:
    """What of ``tvms`` (TVM's inferred type) contradicts ``rule`` (numpy semantics), as
    "extent of dim 0: TVM 23, numpy 21"; "" when nothing does. Only what both know is
    compared: symbolic dims where both sides are constants."""
    if isinstance(rule, TupleTy) or isinstance(tvms, TupleTy):
        if not (isinstance(rule, TupleTy) and isinstance(tvms, TupleTy)):
            return f"type: TVM {_ty_text(tvms)}, numpy {_ty_text(rule)}"
        if len(rule.fields) != len(tvms.fields):
            return f"tuple size: TVM {len(tvms.fields)}, numpy {len(rule.fields)}"
        for i, (a, b) in enumerate(zip(rule.fields, tvms.fields)):
            problem = type_disagreement(a, b)
            if problem:
                return f"{problem} (tuple field {i})"
        return ""
    if rule.dtype and tvms.dtype and rule.dtype != tvms.dtype:
        return f"dtype: TVM {tvms.dtype}, numpy {rule.dtype}"
    if rule.ndim >= 0 and tvms.ndim >= 0 and rule.ndim != tvms.ndim:
        return f"rank: TVM {tvms.ndim}, numpy {rule.ndim}"
    for i, (a, b) in enumerate(zip(rule.shape or [], tvms.shape or [])):
        if isinstance(a, int) and isinstance(b, int) and a != b:
            # Named by dim, not by whole shape, so one bug is one signature at any rank.
            return f"extent of dim {i}: TVM {b}{' (negative)' if b < 0 else ''}, numpy {a}"
    return ""


def _ty_text(t: Ty) -> str:
    if isinstance(t, TupleTy):
        return "(" + ", ".join(_ty_text(f) for f in t.fields) + ")"
    if t.shape is None:
        return f"ndim={t.ndim}"
    return "(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "") + ")"


def _call_order(program: Program, funcs: list[Function]) -> tuple[list[Function], set]:
    """The module's functions callees first (branch functions, which are inlined, left out),
    and the names of those called while their own body is being built (recursion)."""
    done: list[Function] = []
    state: dict[str, int] = {}
    recursive: set = set()

    def visit(f: Function):
        if state.get(f.name) == 1:
            recursive.add(f.name)
            return
        if f.name in state:
            return
        state[f.name] = 1
        for n in f.nodes():
            if n.op == "call":
                visit(program.func(n.attrs["func"]))
            elif n.op == "if":
                for b in program.branches(n):
                    visit(b)
        state[f.name] = 2
        if f.kind != "branch":
            done.append(f)

    for f in funcs:
        visit(f)
    return done, recursive


def to_script(mod) -> str:
    return mod.script(show_meta=True)


def from_script(text: str):
    """Parse TVMScript. It evaluates Python: call only on trusted text or inside the sandbox.
    (Self-contained, as ``to_script``: repro.py runs both as they are.)"""
    import tvm

    return tvm.script.from_source(text)


def struct_info_of(mod, func: str = "main"):
    """The TVM-inferred types of each named binding, in model form (for shape-rule tests)."""
    _, relax, _ = _tvm()
    out = {}
    f = mod[func]

    def visit(b):
        out[compat.var_name(b.var)] = sinfo_to_ty(compat.type_of(b.var))

    for block in f.body.blocks:
        for b in block.bindings:
            visit(b)
    return out


def sinfo_to_ty(si) -> Ty:
    _, relax, _ = _tvm()
    if compat.is_tuple_type(si):
        return TupleTy([sinfo_to_ty(f) for f in si.fields])
    if compat.is_tensor_type(si):
        shape = None
        if si.shape is not None and isinstance(si.shape, relax.ShapeExpr):
            shape = [_prim_to_dim(v) for v in si.shape.values]
        dtype = "" if si.dtype is None else str(si.dtype)
        return TensorTy(shape, dtype, si.ndim)
    raise MaterializeError(f"unsupported struct info {type(si).__name__}")


def _prim_to_dim(e) -> D.Dim:
    _, _, tirx = _tvm()
    if isinstance(e, tirx.IntImm):
        return int(e.value)
    return _prim_str(e)


def _prim_str(e) -> str:
    _, _, tirx = _tvm()
    if isinstance(e, tirx.IntImm):
        return str(int(e.value))
    if isinstance(e, tirx.Var):
        return e.name
    ops = {tirx.Add: "+", tirx.Sub: "-", tirx.Mul: "*", tirx.FloorDiv: "//", tirx.FloorMod: "%"}
    for cls, sym in ops.items():
        if isinstance(e, cls):
            return f"({_prim_str(e.a)} {sym} {_prim_str(e.b)})"
    if isinstance(e, (tirx.Max, tirx.Min)):
        fn = "max" if isinstance(e, tirx.Max) else "min"
        return f"{fn}({_prim_str(e.a)}, {_prim_str(e.b)})"
    if isinstance(e, tirx.Cast):
        return _prim_str(e.value)
    raise MaterializeError(f"unsupported dim expression {e}")


def eval_dim_text(text: str, env: dict) -> int:
    """Evaluate a dim printed by ``_prim_str`` (it may use max/min) under ``env``."""
    if isinstance(text, int):
        return text
    tree = ast.parse(text, mode="eval")
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                            and n.func.id in ("max", "min")):
            raise MaterializeError(f"unexpected call in dim {text!r}")
        if isinstance(n, ast.Attribute):
            raise MaterializeError(f"unexpected attribute in dim {text!r}")
    return int(eval(compile(tree, "<dim>", "eval"), {"__builtins__": {}, "max": max, "min": min},
                    dict(env)))


# --- the same construction as Python source, for a repro.py --------------------------------
def builder_source(program: Program) -> str:
    """Python that constructs ``program``'s module with ``relax.BlockBuilder`` call by call,
    as ``materialize`` does (the same ``spec.call`` arguments, the installed release's
    spelling of the types): ``build_module()`` returns the module. For a finding TVM meets
    while the module is constructed, there is no module to print: this is its reduced
    case, runnable with TVM and numpy alone."""
    _, relax, _ = _tvm()
    struct = compat.struct_info_api()
    tensor = "relax.TensorStructInfo" if struct else "relax.TensorType"
    tup = "relax.TupleStructInfo" if struct else "relax.TupleType"
    prim = "relax.prim_value" if hasattr(relax, "prim_value") else "relax.PrimValue"
    lines = ["import numpy as np", "import tvm", "from tvm import relax, tirx", "", "",
             "def build_module():", "    bb = relax.BlockBuilder()", "    gvars = {}"]
    order = [f for f in program.functions if f.name != program.entry] + [program.main]
    order, recursive = _call_order(program, order)
    if recursive:
        lines.append("    temps = []")
    for f in order:
        if f.name in recursive:
            syms: set = set()
            params = [f"relax.Var({p.name!r}, {_ty_source(p.ty, syms, tensor, tup)})"
                      for p in f.params]
            ret = _ty_source(f.ret_annot or f.value_types()[f.ret], syms, tensor, tup)
            lines += [f"    {s} = tirx.Var({s!r}, 'int64')" for s in sorted(syms)]
            empty = f"relax.Function.create_empty([{', '.join(params)}], {ret})"
            if f.name == program.entry:
                empty += f".with_attr('global_symbol', {f.name!r})"
            lines.append(f"    gvars[{f.name!r}] = bb.add_func({empty}, {f.name!r})")
    for f in order:
        lines += _function_source(f, program, tensor, tup, prim, f.name in recursive)
    if recursive:
        lines += ["    mod = bb.get()",
                  "    return tvm.IRModule({gv: fn for gv, fn in mod.functions.items()",
                  "                         if gv not in temps}, attrs=mod.attrs)", ""]
    else:
        lines += ["    return bb.get()", ""]
    return "\n".join(lines)


def _dim_source(d, syms: set) -> str:
    if isinstance(d, int):
        return f"tirx.IntImm('int64', {d})"

    def conv(n) -> str:
        if isinstance(n, ast.Constant):
            return f"tirx.IntImm('int64', {n.value})"
        if isinstance(n, ast.Name):
            syms.add(n.id)
            return n.id
        if isinstance(n, ast.UnaryOp):
            return f"(tirx.IntImm('int64', 0) - {conv(n.operand)})"
        a, b = conv(n.left), conv(n.right)
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}.get(type(n.op))
        if op:
            return f"({a} {op} {b})"
        fn = "floordiv" if isinstance(n.op, ast.FloorDiv) else "floormod"
        return f"tirx.{fn}({a}, {b})"

    return conv(D.parse(d))


def _ty_source(ty: Ty, syms: set, tensor: str, tup: str) -> str:
    if isinstance(ty, TupleTy):
        return f"{tup}([{', '.join(_ty_source(f, syms, tensor, tup) for f in ty.fields)}])"
    dtype = repr(ty.dtype or ("" if tensor.endswith("StructInfo") else None))
    if ty.shape is None:
        return f"{tensor}(None, {dtype}, ndim={ty.ndim})"
    return f"{tensor}([{', '.join(_dim_source(d, syms) for d in ty.shape)}], {dtype})"


def _arg_source(a, syms: set, prim: str) -> str:
    if isinstance(a, ShapeArg):
        return f"[{', '.join(_dim_source(d, syms) for d in a.dims)}]"
    if isinstance(a, ConstArg):
        return f"relax.const(np.array({a.value!r}, dtype={np.dtype(np_dtype(a.dtype)).name!r}), {a.dtype!r})"
    if isinstance(a, TupleArg):
        return f"relax.Tuple([{', '.join(_arg_source(x, syms, prim) for x in a.items)}])"
    if isinstance(a, PrimArg):
        if isinstance(a.value, str):
            return f"{prim}({_dim_source(a.value, syms)})"
        imm = "FloatImm" if isinstance(a.value, float) else "IntImm"
        return f"{prim}(tirx.{imm}({a.dtype!r}, {a.value!r}))"
    if isinstance(a, list):
        return f"[{', '.join(_arg_source(x, syms, prim) for x in a)}]"
    if isinstance(a, _VarRef):
        return a.name
    if callable(a):   # an index map (layout_transform): written out on symbolic indices
        import inspect

        names = [f"i{k}" for k in range(len(inspect.signature(a).parameters))]
        out = a(*[_Sym(n) for n in names])
        body = ", ".join(str(x) for x in out) if isinstance(out, (tuple, list)) else str(out)
        return f"lambda {', '.join(names)}: ({body}{',' if isinstance(out, tuple) and len(out) == 1 else ''})"
    return repr(a)


class _Sym:
    """An index of an index map written out: arithmetic on it gives the expression's text."""

    def __init__(self, text: str):
        self.text = text

    def __str__(self) -> str:
        return self.text

    def _op(self, op: str, other, rev: bool = False) -> "_Sym":
        a, b = (str(other), self.text) if rev else (self.text, str(other))
        return _Sym(f"({a} {op} {b})")

    def __add__(self, o): return self._op("+", o)
    def __radd__(self, o): return self._op("+", o, True)
    def __sub__(self, o): return self._op("-", o)
    def __rsub__(self, o): return self._op("-", o, True)
    def __mul__(self, o): return self._op("*", o)
    def __rmul__(self, o): return self._op("*", o, True)
    def __floordiv__(self, o): return self._op("//", o)
    def __mod__(self, o): return self._op("%", o)


class _VarRef:
    """A value of the function being written out, by its Python name."""

    def __init__(self, name: str):
        self.name = name


def _function_source(f: Function, program: Program, tensor: str, tup: str,
                     prim: str, recursive: bool = False) -> list[str]:
    syms: set = set()
    body: list[str] = []
    params = [f"relax.Var({p.name!r}, {_ty_source(p.ty, syms, tensor, tup)})" for p in f.params]
    used_later: set[str] = {f.ret}
    for i, b in enumerate(f.blocks):
        for later in f.blocks[i + 1:]:
            for n in later.nodes:
                used_later.update(n.args)
    private = f.name != program.entry
    name = f.name + "__body" if recursive else f.name
    body.append(f"    params = [{', '.join(params)}]")
    body += [f"    {p.name} = params[{i}]" for i, p in enumerate(f.params)]
    body.append(f"    with bb.function({name!r}, params, private={private}):")
    for block in f.blocks:
        ind = "        "
        if block.dataflow:
            body.append(ind + "with bb.dataflow():")
            ind += "    "
        _nodes_source(block.nodes, ind, body, syms, tensor, tup, prim, program, block.dataflow)
        if block.dataflow:
            for n in block.nodes:
                if n.name in used_later:
                    body.append(f"{ind}{n.name} = bb.emit_output({n.name}, "
                                f"name_hint={n.name!r})")
    body.append(f"        bb.emit_func_output({f.ret})")
    body.append(f"    gv = bb.get().get_global_var({name!r})")
    if f.ret_annot is not None or recursive:
        ret = _ty_source(f.ret_annot, syms, tensor, tup) if f.ret_annot is not None else "None"
        body.append("    built = bb.get()[gv]")
        body.append(f"    bb.update_func({'gvars[' + repr(f.name) + ']' if recursive else 'gv'}, "
                    f"relax.Function(built.params, built.body, {ret}, is_pure=True, "
                    "attrs=built.attrs))")
    if recursive:
        body.append("    temps.append(gv)")
    else:
        body.append(f"    gvars[{f.name!r}] = gv")
    head = [f"    # function {f.name}"] + [f"    {s} = tirx.Var({s!r}, 'int64')"
                                           for s in sorted(syms)]
    return head + body


def _nodes_source(nodes, ind: str, body: list, syms: set, tensor: str, tup: str, prim: str,
                  program: Program, dataflow: bool) -> None:
    for n in nodes:
        if n.op == "match_cast":
            body.append(f"{ind}{n.name} = bb.match_cast({n.args[0]}, "
                        f"{_ty_source(ty_from_json(n.attrs['ty']), syms, tensor, tup)}, "
                        f"name_hint={n.name!r})")
            continue
        if n.op == "dyn_slice":
            body.append(f"{ind}{n.name}_s = bb.emit(relax.op.dynamic_strided_slice("
                        f"{', '.join(n.args)}), name_hint={n.name + '_s'!r})")
            body.append(f"{ind}{n.name} = bb.match_cast({n.name}_s, "
                        f"{_ty_source(n.ty, syms, tensor, tup)}, name_hint={n.name!r})")
            continue
        if n.op == "if":
            seqs = []
            for side, branch in zip(("then", "else"), program.branches(n)):
                body += [f"{ind}{p.name} = {a}" for p, a in zip(branch.params, n.args[1:])]
                body.append(f"{ind}bb._begin_binding_block()")
                for b in branch.blocks:
                    _nodes_source(b.nodes, ind, body, syms, tensor, tup, prim, program, False)
                body.append(f"{ind}blk = bb._end_block()")
                body.append(f"{ind}{n.name}_{side} = relax.SeqExpr([blk] if len(blk.bindings) "
                            f"else [], {branch.ret})")
                seqs.append(f"{n.name}_{side}")
            expr = f"relax.If({n.args[0]}, {seqs[0]}, {seqs[1]})"
        elif n.op == "dps_copy":
            expr = (f"relax.call_dps_packed({DPS_COPY!r}, [{n.args[0]}], "
                    f"{_ty_source(n.ty, syms, tensor, tup)})")
        elif n.op == "call_tir":
            from .calltir import func_name

            body.append(f"{ind}{n.name}_f = bb.add_func(tvm.script.from_source("
                        f"{prim_func_text(n)!r}), {func_name(n)!r})")
            tys = n.ty.fields if isinstance(n.ty, TupleTy) else [n.ty]
            out = ", ".join(_ty_source(t, syms, tensor, tup) for t in tys)
            out = f"[{out}]" if isinstance(n.ty, TupleTy) else out
            expr = (f"relax.op.call_tir({n.name}_f, relax.Tuple([{', '.join(n.args)}]), "
                    f"{compat.call_tir_out_kw()}={out})")
        elif n.op == "shape_tensor":
            body.append(f"{ind}{n.name}_s = bb.emit(relax.op.shape_of({n.args[0]}), "
                        f"name_hint={n.name + '_s'!r})")
            expr = f"relax.op.shape_to_tensor({n.name}_s)"
        elif n.op == "reshape_dyn":
            dims = ", ".join(_dim_source(d, syms) for d in n.attrs["dims"])
            shape = "relax.ShapeStructInfo" if tensor.endswith("StructInfo") else \
                "relax.ShapeType"
            body.append(f"{ind}{n.name}_s = bb.emit(relax.op.tensor_to_shape({n.args[1]}), "
                        f"name_hint={n.name + '_s'!r})")
            body.append(f"{ind}{n.name}_m = bb.match_cast({n.name}_s, {shape}([{dims}]), "
                        f"name_hint={n.name + '_m'!r})")
            expr = f"relax.op.reshape({n.args[0]}, relax.ShapeExpr([{dims}]))"
        else:
            expr = _node_source(n, syms, prim)
        if n.annot is not None:
            cls = "relax.DataflowVar" if dataflow else "relax.Var"
            body.append(f"{ind}{n.name} = {cls}({n.name!r}, "
                        f"{_ty_source(n.annot, syms, tensor, tup)})")
            body.append(f"{ind}bb.emit_normalized(relax.VarBinding({n.name}, "
                        f"bb.normalize({expr})))")
        else:
            body.append(f"{ind}{n.name} = bb.emit({expr}, name_hint={n.name!r})")


def _node_source(node, syms: set, prim: str) -> str:
    args = node.args
    if node.op == "tuple":
        return f"relax.Tuple([{', '.join(args)}])"
    if node.op == "get_item":
        return f"relax.TupleGetItem({args[0]}, {int(node.attrs['index'])})"
    if node.op == "call":
        return f"relax.Call(gvars[{node.attrs['func']!r}], [{', '.join(args)}])"
    if node.op == "const":
        t = ty_from_json(node.attrs["ty"])
        return (f"relax.const(np.full({[int(d) for d in t.shape]}, {node.attrs['value']!r}, "
                f"dtype={np.dtype(np_dtype(t.dtype)).name!r}), {t.dtype!r})")
    if node.op in CATALOGUE:
        spec = CATALOGUE[node.op]
        pos, kw = spec.call([_VarRef(a) for a in args], dict(node.attrs))
        text = [_arg_source(a, syms, prim) for a in pos]
        text += [f"{k}={_arg_source(v, syms, prim)}" for k, v in kw.items()]
        return f"relax.op.{spec.builder}({', '.join(text)})"
    raise MaterializeError(f"unknown op {node.op!r} in node {node.name}")
