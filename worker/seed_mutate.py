"""Deterministic random mutations of a real Relax module (a TVMScript seed), and the judge of a
seeded case (``fuzz.seeded.SeededCase``). Sandbox child only: the seed is parsed here, never in
the parent.

OATest (ICSE'26) found TVM bugs by splicing the patterns specific passes rewrite into seed
graphs and comparing the module with and without the passes. Here each mutation is one small
function in ``MUTATIONS`` (the op catalogue's style: one entry, one move), which rewrites one
Relax function of the module at one value ``x`` (a binding or a parameter) and hands the later
users of ``x`` the new value, which has ``x``'s type:

| mutation | what is spliced after ``x`` | the passes it feeds |
|---|---|---|
| ``insert_unary`` | a total unary catalogue op of ``x``'s dtype (tanh, relu, abs, ...) | fusion |
| ``replace_unary`` | an op of the unary family replaced by a total one of that dtype | legalize, fusion |
| ``replace_binary`` | add/subtract/multiply/maximum/minimum for one another | legalize, fusion |
| ``fuse_matmul`` | relu(matmul(x, W) + b), W square (x's last dim) | FuseOps, FuseTIR, CombineParallelMatmul |
| ``fuse_conv`` | relu(conv2d(x, W, padding 1) + bias), NCHW | FuseOps, ConvertLayout |
| ``reshape_chain`` | reshape to flat and back | RewriteDataflowReshape, FuseOps |
| ``fold_constant`` | x * (1 * 1) + (0 + 0), constants only in the inner binding | FoldConstant |
| ``tuple_roundtrip`` | (x, x)[0] | CanonicalizeBindings, ExpandTupleArguments |
| ``layout_roundtrip`` | permute_dims and its inverse (NCHW -> NHWC -> NCHW for rank 4) | ConvertLayout, FuseOps |

A mutation that does not apply (no value of a fitting type) or that TVM refuses to construct
(normalization or ``well_formed`` fails) is skipped: it is no finding. The mutant is judged by
``execute.judge_module`` with ``TextInputs`` under the case's variants (the default pipeline and
a random ``relax.transform`` pass sequence): results compared across variants are the
differential oracle of a module with and without the passes.
"""
from __future__ import annotations

import functools
import random
import time
from typing import Callable, Optional

import numpy as np

from fuzz.catalogue import CATALOGUE
from fuzz.catalogue.elementwise import Unary

SAFE_FLOATS = ("float32", "float16", "float64")   # dtypes constants are made in (numpy)
BINARY = ("relax.add", "relax.subtract", "relax.multiply", "relax.maximum", "relax.minimum")


class Skip(Exception):
    """This mutation does not apply here, or TVM refused to construct its result."""


@functools.lru_cache(maxsize=None)
def _api():
    import tvm
    from tvm import relax
    from tvm.relax.expr_functor import PyExprMutator, mutator

    @mutator
    class Subst(PyExprMutator):
        def __init__(self, var_map: dict):
            super().__init__()
            self.var_map = var_map

        def visit_var_(self, op):
            return self.var_map.get(op, op)

        def visit_dataflow_var_(self, op):
            return self.var_map.get(op, op)

    return tvm, relax, Subst


@functools.lru_cache(maxsize=None)
def total_unary() -> dict:
    """dtype -> unary catalogue ops defined everywhere (no domain), keeping the dtype and
    continuous: safe to splice anywhere."""
    out: dict = {}
    for s in CATALOGUE.values():
        if isinstance(s, Unary) and s.domain is None and not s.out_dtype and not s.attrs \
                and not s.discontinuous:
            for d in s.dtypes:
                out.setdefault(d, []).append(s)
    return out


def _op(spec_or_name):
    """The relax.op builder of a catalogue spec (or an op name)."""
    from tvm import relax

    path = spec_or_name.builder if hasattr(spec_or_name, "builder") \
        else spec_or_name[len("relax."):]
    f = relax.op
    for part in path.split("."):
        f = getattr(f, part)
    return f


# --- values and rewriting ------------------------------------------------------------------
def _tensor(v) -> Optional[tuple]:
    """(shape dims or None, dtype) of a tensor-typed variable with known rank and dtype."""
    _, relax, _ = _api()
    ty = v.ty
    if not isinstance(ty, relax.TensorType) or ty.ndim < 0 or not str(ty.dtype) \
            or str(ty.dtype) == "void":
        return None
    dims = None
    if isinstance(ty.shape, relax.ShapeExpr):
        dims = [int(d.value) if type(d).__name__ == "IntImm" else None
                for d in ty.shape.values]
    return dims, str(ty.dtype)


def _functions(mod) -> list:
    _, relax, _ = _api()
    return sorted([(gv, f) for gv, f in mod.functions.items() if isinstance(f, relax.Function)],
                  key=lambda x: x[0].name_hint)


def values(mod, pred: Callable) -> list:
    """(GlobalVar, function, var) for every parameter and binding of every Relax function
    (binding order) whose tensor type satisfies ``pred(dims, dtype)``."""
    out = []
    for gv, f in _functions(mod):
        if not f.body.blocks:
            continue
        vs = list(f.params) + [b.var for blk in f.body.blocks for b in blk.bindings]
        for v in vs:
            t = _tensor(v)
            if t is not None and pred(*t):
                out.append((gv, f, v))
    return out


def bindings_of(mod, ops: tuple) -> list:
    """(GlobalVar, function, binding) of calls to ``ops``."""
    _, relax, _ = _api()
    out = []
    for gv, f in _functions(mod):
        for blk in f.body.blocks:
            for b in blk.bindings:
                if isinstance(b.value, relax.Call) and hasattr(b.value.op, "name") \
                        and b.value.op.name in ops and _tensor(b.var) is not None:
                    out.append((gv, f, b))
    return out


class _Names:
    def __init__(self):
        self.n = 0

    def __call__(self, base: str) -> str:
        self.n += 1
        return f"{base}_m{self.n}"


def rewrite(mod, gv, func, at=None, build=None, value_of=None):
    """``mod`` with ``func`` rewritten: after the value ``at`` (a binding's var, or a
    parameter: then at the start of the first block) the bindings ``build(x, emit)`` emits
    (``emit(expr) -> var``), the var it returns standing for ``at`` in every later use;
    ``value_of``: {binding var: new value}. Normalized and verified; raises Skip where TVM
    refuses."""
    tvm, relax, Subst = _api()
    var_map: dict = {}
    subst = Subst(var_map)
    bb = relax.BlockBuilder()
    names = _Names()
    value_of = value_of or {}

    def splice(x, cur: list, df: bool):
        def emit(expr, name: str = "t"):
            expr = bb.normalize(expr)
            v = (relax.DataflowVar if df else relax.Var)(names(name), expr.ty)
            cur.append(relax.VarBinding(v, expr))
            return v

        out = build(x, emit)
        # The value standing for ``at`` may be used after the block: an output variable.
        last = cur[-1]
        if df and last.var.same_as(out):
            nv = relax.Var(out.name_hint if hasattr(out, "name_hint") else out.name, out.ty)
            cur[-1] = relax.VarBinding(nv, last.value)
            out = nv
        return out

    is_param = at is not None and any(at.same_as(p) for p in func.params)
    blocks = []
    try:
        for bi, blk in enumerate(func.body.blocks):
            df = isinstance(blk, relax.DataflowBlock)
            cur: list = []
            if is_param and bi == 0:
                var_map[at] = splice(at, cur, df)
            for b in blk.bindings:
                value = bb.normalize(subst.visit_expr(value_of.get(b.var, b.value)))
                if isinstance(b, relax.MatchCast):
                    nv = type(b.var)(b.var.name_hint if hasattr(b.var, "name_hint")
                                     else b.var.name, b.ty)
                    cur.append(relax.MatchCast(nv, value, b.ty))
                else:
                    nv = type(b.var)(b.var.name_hint if hasattr(b.var, "name_hint")
                                     else b.var.name, value.ty)
                    cur.append(relax.VarBinding(nv, value))
                var_map[b.var] = nv
                if at is not None and not is_param and b.var.same_as(at):
                    var_map[b.var] = splice(nv, cur, df)
            blocks.append(relax.DataflowBlock(cur) if df else relax.BindingBlock(cur))
        body = bb.normalize(subst.visit_expr(func.body.body))
        new = relax.Function(func.params, relax.SeqExpr(blocks, body), body.ty, func.is_pure,
                             func.attrs)
        funcs = {g: (new if g.same_as(gv) else f) for g, f in mod.functions.items()}
        out = tvm.IRModule(funcs, attrs=mod.attrs, global_infos=mod.global_infos)
        out = relax.transform.Normalize()(out)
        if relax.analysis.well_formed(out) is False:
            raise Skip("ill-formed")
        return out
    except Skip:
        raise
    except Exception as e:  # noqa: BLE001 - TVM refusing to construct the mutant
        raise Skip(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200])


def _name(v) -> str:
    return getattr(v, "name_hint", None) or getattr(v, "name", "?")


def _const(array: np.ndarray):
    _, relax, _ = _api()
    return relax.const(array)


# --- the mutations -----------------------------------------------------------------------
def insert_unary(mod, rng: random.Random):
    table = total_unary()
    cands = values(mod, lambda dims, dtype: dtype in table and dtype != "bool")
    if not cands:
        raise Skip("no value of a dtype a total unary op takes")
    gv, f, x = rng.choice(cands)
    spec = rng.choice(table[_tensor(x)[1]])
    mod = rewrite(mod, gv, f, x, lambda v, emit: emit(_op(spec)(v), "u"))
    return mod, f"insert_unary: {spec.name} after {_name(x)} in {gv.name_hint}"


def replace_unary(mod, rng: random.Random):
    table = total_unary()
    unary = tuple(s.name for s in CATALOGUE.values() if isinstance(s, Unary)
                  and not s.out_dtype and not s.attrs)
    cands = [c for c in bindings_of(mod, unary) if _tensor(c[2].var)[1] in table
             and len(c[2].value.args) == 1]
    if not cands:
        raise Skip("no unary op of a dtype with total ops")
    gv, f, b = rng.choice(cands)
    others = [s for s in table[_tensor(b.var)[1]] if s.name != b.value.op.name]
    spec = rng.choice(others)
    mod = rewrite(mod, gv, f, value_of={b.var: _op(spec)(b.value.args[0])})
    return mod, f"replace_unary: {_name(b.var)} {b.value.op.name} -> {spec.name}"


def replace_binary(mod, rng: random.Random):
    cands = [c for c in bindings_of(mod, BINARY + ("relax.divide",))
             if _tensor(c[2].var)[1].startswith(("float", "bfloat"))]
    if not cands:
        raise Skip("no float binary op")
    gv, f, b = rng.choice(cands)
    op = rng.choice([o for o in BINARY if o != b.value.op.name])
    mod = rewrite(mod, gv, f, value_of={b.var: _op(op)(*b.value.args)})
    return mod, f"replace_binary: {_name(b.var)} {b.value.op.name} -> {op}"


def _float_const(rng: random.Random, shape, dtype: str, scale: float = 1.0):
    r = np.random.default_rng(rng.randrange(1 << 30))
    return _const((r.uniform(-1, 1, size=shape) * scale).astype(dtype))


def fuse_matmul(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: dtype in SAFE_FLOATS and dims is not None
                   and len(dims) >= 1 and dims[-1] is not None and 1 <= dims[-1] <= 64)
    if not cands:
        raise Skip("no float value with a small static last dim")
    gv, f, x = rng.choice(cands)
    dims, dtype = _tensor(x)
    k = dims[-1]
    w = _float_const(rng, (k, k), dtype, 1 / np.sqrt(k))
    b = _float_const(rng, (k,), dtype)
    _, relax, _ = _api()

    def build(v, emit):
        return emit(relax.op.nn.relu(emit(relax.op.add(emit(relax.op.matmul(v, w), "mm"), b),
                                          "bias")), "act")

    return rewrite(mod, gv, f, x, build), f"fuse_matmul: after {_name(x)} in {gv.name_hint}"


def fuse_conv(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: dtype in SAFE_FLOATS and dims is not None
                   and len(dims) == 4 and dims[1] is not None and 1 <= dims[1] <= 32)
    if not cands:
        raise Skip("no 4-d float value with a small static channel dim")
    gv, f, x = rng.choice(cands)
    dims, dtype = _tensor(x)
    c = dims[1]
    w = _float_const(rng, (c, c, 3, 3), dtype, 1 / (3 * np.sqrt(c)))
    bias = _float_const(rng, (1, c, 1, 1), dtype)
    _, relax, _ = _api()

    def build(v, emit):
        conv = emit(relax.op.nn.conv2d(v, w, padding=[1, 1]), "conv")
        return emit(relax.op.nn.relu(emit(relax.op.add(conv, bias), "bias")), "act")

    return rewrite(mod, gv, f, x, build), f"fuse_conv: after {_name(x)} in {gv.name_hint}"


def reshape_chain(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: dims is not None and len(dims) >= 1
                   and None not in dims)
    if not cands:
        raise Skip("no value of static shape")
    gv, f, x = rng.choice(cands)
    dims, _ = _tensor(x)
    _, relax, _ = _api()
    flat = [int(np.prod(dims))]
    if len(dims) >= 3 and rng.random() < 0.5:   # merge the leading two dims instead
        flat = [dims[0] * dims[1]] + dims[2:]

    def build(v, emit):
        return emit(relax.op.reshape(emit(relax.op.reshape(v, flat), "flat"), dims), "back")

    return (rewrite(mod, gv, f, x, build),
            f"reshape_chain: {_name(x)} to {flat} and back in {gv.name_hint}")


def fold_constant(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: dtype in SAFE_FLOATS + ("int32", "int64"))
    if not cands:
        raise Skip("no value of a dtype with constants")
    gv, f, x = rng.choice(cands)
    dtype = _tensor(x)[1]
    _, relax, _ = _api()
    one, zero = np.array(1, dtype), np.array(0, dtype)

    def build(v, emit):
        scale = emit(relax.op.multiply(_const(one), _const(one)), "c")   # folds to 1
        shift = emit(relax.op.add(_const(zero), _const(zero)), "c")      # folds to 0
        return emit(relax.op.add(emit(relax.op.multiply(v, scale), "scaled"), shift), "shifted")

    return rewrite(mod, gv, f, x, build), f"fold_constant: after {_name(x)} in {gv.name_hint}"


def tuple_roundtrip(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: True)
    if not cands:
        raise Skip("no tensor value")
    gv, f, x = rng.choice(cands)
    _, relax, _ = _api()
    i = rng.randrange(2)

    def build(v, emit):
        t = emit(relax.Tuple([v, v] if i == 0 else [v, v, v]), "tup")
        return emit(relax.TupleGetItem(t, i), "item")

    return rewrite(mod, gv, f, x, build), f"tuple_roundtrip: {_name(x)} in {gv.name_hint}"


def layout_roundtrip(mod, rng: random.Random):
    cands = values(mod, lambda dims, dtype: dims is not None and len(dims) >= 2)
    if not cands:
        raise Skip("no value of rank 2 or more")
    gv, f, x = rng.choice(cands)
    rank = len(_tensor(x)[0])
    if rank == 4 and rng.random() < 0.6:
        perm = [0, 2, 3, 1]   # NCHW -> NHWC
    else:
        perm = list(range(rank))
        while perm == list(range(rank)):
            rng.shuffle(perm)
    inv = [perm.index(i) for i in range(rank)]
    _, relax, _ = _api()

    def build(v, emit):
        return emit(relax.op.permute_dims(emit(relax.op.permute_dims(v, perm), "perm"), inv),
                    "unperm")

    return (rewrite(mod, gv, f, x, build),
            f"layout_roundtrip: {_name(x)} by {perm} and back in {gv.name_hint}")


MUTATIONS = {
    "insert_unary": insert_unary,
    "replace_unary": replace_unary,
    "replace_binary": replace_binary,
    "fuse_matmul": fuse_matmul,
    "fuse_conv": fuse_conv,
    "reshape_chain": reshape_chain,
    "fold_constant": fold_constant,
    "tuple_roundtrip": tuple_roundtrip,
    "layout_roundtrip": layout_roundtrip,
}


def mutate(mod, seed: int, steps: int) -> tuple:
    """(mutant, the mutations applied): ``steps`` draws from ``MUTATIONS``, each tried on up
    to 4 mutations until one applies; deterministic from (module, seed, steps)."""
    rng = random.Random(seed * 2_654_435_761 + 97)
    applied = []
    names = list(MUTATIONS)
    for _ in range(steps):
        for name in rng.sample(names, 4):
            try:
                mod, what = MUTATIONS[name](mod, rng)
            except Skip:
                continue
            applied.append(what)
            break
    return mod, applied


# --- the seeded case ---------------------------------------------------------------------
def mutant_text(case) -> tuple:
    """(mutant module, its TVMScript, mutations applied) of a ``SeededCase`` (a frozen one:
    its mutant, parsed). Raises what the parser raises for text that is not TVMScript."""
    import tvm

    from fuzz.materialize import to_script

    from .script_guard import check_script

    if case.mutant is not None:
        check_script(case.mutant)
        mod = tvm.script.from_source(case.mutant)
        return mod, case.mutant, list(case.meta.get("seed_mutations") or [])
    check_script(case.seed_text)
    seed = tvm.script.from_source(case.seed_text)
    mod, applied = mutate(seed, int(case.meta.get("seed") or 0), case.steps)
    return mod, to_script(mod), applied


def judge_seeded(case, variants: list, input_seed: int = 0):
    """Mutate the seed (or take the frozen mutant) and judge it: the one judging loop with
    ``TextInputs``, the comparison across variants being the oracle. The outcome records the
    mutations (``extra.seed_mutations``) and, for a finding, the mutant's text
    (``extra.mutant``), which the campaign freezes into the case."""
    import tvm

    from . import breadcrumb
    from .execute import Outcome, _fail, _variants, finish, judge_module

    variants = _variants(variants or [{}])
    t0 = time.perf_counter()
    breadcrumb.mark(stage="parse")
    try:
        mod, text, applied = mutant_text(case)
    except Exception as e:  # noqa: BLE001 - a seed TVM does not parse: not a finding
        return finish(_fail("parse", e, kind="bad_seed", verdict="invalid"), t0, variants[0], [])
    if case.mutant is None:
        # Judge the module the text gives back, so a replay of the frozen text judges the
        # very module judged here (where it does not parse back, the module itself: the
        # round-trip check then reports it).
        try:
            mod = tvm.script.from_source(text)
        except Exception:  # noqa: BLE001
            pass
    if not any(isinstance(f, tvm.relax.Function) and gv.name_hint == "main"
               for gv, f in mod.functions.items()):
        return finish(Outcome("invalid", "unsupported_input", "parse", "", "a seed needs a "
                              "Relax function main"), t0, variants[0], [])
    from .script_judge import TextInputs

    o = judge_module(mod, TextInputs(mod, input_seed), variants, t0=t0)
    o.extra["seed_mutations"] = applied
    if o.verdict != "pass":
        o.extra["mutant"] = text
    return o
