"""The Relax program generator: builds a ``Program`` from a ``Chooser``.

Valid by construction: each op's spec picks inputs it accepts and its shape rule types the
result, so the program reaches TVM's deep passes instead of failing in type inference. Value
ranges travel with each value so ops with restricted domains (log, sqrt, integer division) get
inputs on which numpy and TVM are both defined.

Near-valid mode (``fuzz.mutate``) starts from a valid program and breaks one promise at a time.
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Callable, Optional, Sequence

from . import GENERATOR_VERSION
from . import dims as D
from .catalogue import CATALOGUE, OpSpec
from .catalogue.spec import (DTYPE_LIMIT, FLOATS, INTS, Value, is_float, within)
from .choice import Chooser, RandomChooser
from .model import (STRUCTURAL_OPS, Block, Function, Node, Param, Program, TensorTy, TupleTy,
                    Ty)

MAX_NUMEL = 1 << 14     # keeps compile and run of one case in milliseconds
SYM_NAMES = ("n", "m", "k")
DTYPE_WEIGHTS = {"float32": 8, "float16": 2, "bfloat16": 1.5, "float64": 1.5, "int32": 2,
                 "int64": 1.5, "int8": 1, "uint8": 1, "bool": 1}


def default_range(dtype: str) -> tuple[float, float]:
    if dtype == "bool":
        return (0, 1)
    if dtype == "uint8":
        return (0, 8)
    if dtype in INTS:
        return (-8, 8)
    return (-2.0, 2.0)


class GenContext:
    """What an op spec sees while sampling: the values in scope and ways to make new ones."""

    def __init__(self, ch: Chooser, mode: str = "valid", allow_sym: bool = True,
                 sym_names: Sequence[str] = SYM_NAMES, guide=None,
                 avoid_dtypes: Sequence[str] = ()):
        self.ch = ch
        # dtypes new values are not given where an op allows others (an ONNX case: the
        # exporter has no bfloat16); empty: every draw as without it
        self.avoid_dtypes = tuple(avoid_dtypes)
        # fuzz.coverage.Guide: favours ops, edges and (op, dtype) pairs not yet covered;
        # None: the unguided weights (same seed, same program)
        self.guide = guide
        self.op: Optional[str] = None        # the op being sampled (for the dtype weights)
        self.last_op: Optional[str] = None   # the op added last (for the edge weights)
        self.producer: dict = {}   # value name -> the catalogue op that made it (guided only)
        self.mode = mode
        self.allow_sym = allow_sym
        self.sym_names = list(sym_names)
        self.params: list[Param] = []
        self.nodes: list[Node] = []
        self.pool: list[Value] = []
        self._n = 0

    # --- names ---------------------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    # --- dtypes and shapes ---------------------------------------------------------------
    def dtype(self, allowed: Sequence[str]) -> str:
        allowed = list(allowed)
        if self.avoid_dtypes:
            allowed = [d for d in allowed if d not in self.avoid_dtypes] or allowed
        weights = [DTYPE_WEIGHTS.get(d, 1) for d in allowed]
        if self.guide is not None and self.op is not None:
            weights = self.guide.dtype_weights(self.op, allowed, weights)
        return self.ch.weighted(allowed, weights)

    def dim(self, static: bool = False, min_dim: int = 1, max_dim: int = 6) -> D.Dim:
        if not static and self.allow_sym and min_dim <= 1 and self.ch.boolean(0.15):
            return self.ch.choice(self.sym_names)
        r = self.ch.integer(0, 99)
        if r < 2 and min_dim <= 0:
            return 0
        if r < 22:
            return max(1, min_dim)
        if r < 25 and max_dim >= 6:
            return self.ch.integer(32, 128)   # a large dim: tiling and vectorization edges
        return self.ch.integer(max(min_dim, 2), max(max_dim, max(min_dim, 2)))

    def shape(self, rank: int, static: bool = False, min_dim: int = 1,
              max_dim: int = 6) -> list[D.Dim]:
        for _ in range(8):
            s = [self.dim(static, min_dim, max_dim) for _ in range(rank)]
            if _numel_bound(s) <= MAX_NUMEL:
                return s
        return [min_dim if min_dim > 0 else 1] * rank

    # --- values --------------------------------------------------------------------------
    def sub(self) -> "GenContext":
        """A context for a body built inside this function's (an R.If branch, a loop): the
        same chooser and name counter, valid mode, no new symbolic dims."""
        sub = GenContext(self.ch, "valid", allow_sym=False, avoid_dtypes=self.avoid_dtypes)
        sub._n = self._n
        return sub

    def apply(self, spec: OpSpec) -> Optional[Node]:
        """``apply_op`` in this context."""
        return apply_op(self, spec)

    def new_param(self, shape: list, dtype: str, lo: Optional[float] = None,
                  hi: Optional[float] = None) -> Value:
        dlo, dhi = default_range(dtype)
        lo = dlo if lo is None else lo
        hi = dhi if hi is None else hi
        name = self.fresh("p")
        p = Param(name, TensorTy(list(shape), dtype), lo, hi)
        self.params.append(p)
        v = Value(name, p.ty, lo, hi, exact=True)
        self.pool.append(v)
        return v

    def candidates(self, dtypes=None, rank=None, pred=None, static=False) -> list[Value]:
        out = []
        for v in self.pool:
            if dtypes is not None and v.dtype not in dtypes:
                continue
            if rank is not None:
                lo, hi = (rank, rank) if isinstance(rank, int) else rank
                if not lo <= v.rank <= hi:
                    continue
            if static and not v.static():
                continue
            if pred is not None and not pred(v):
                continue
            out.append(v)
        return out

    def pick(self, dtypes: Sequence[str] = FLOATS, rank=(0, 4), pred=None,
             static: bool = False, new_range: Optional[tuple] = None,
             new_shape: Optional[list] = None, fresh_p: float = 0.25,
             min_dim: int = 1, max_dim: int = 6) -> Value:
        """A value in scope that satisfies the constraints, or a new parameter that does.

        Recent values are preferred, which makes chains; the rest makes diamonds and shared
        inputs. ``new_range`` is the (lo, hi) a new parameter gets, and must satisfy ``pred``."""
        cands = self.candidates(dtypes, rank, pred, static)
        if new_shape is not None:
            cands = [v for v in cands if _same_shape(v.shape, new_shape)]
        if cands and not self.ch.boolean(fresh_p):
            if self.ch.boolean(0.6):
                return cands[-1] if self.ch.boolean(0.5) else cands[max(0, len(cands) - 3):][
                    self.ch.integer(0, min(2, len(cands) - 1))]
            if self.guide is not None and self.op is not None:   # favour uncovered edges
                return self.ch.weighted(cands, self.guide.value_weights(
                    self.op, [self.producer.get(v.name) for v in cands]))
            return self.ch.choice(cands)
        dtype = self.dtype(dtypes)
        lo_hi = new_range or default_range(dtype)
        fixed = new_shape is not None
        for _ in range(8):
            if not fixed:
                lo, hi = (rank, rank) if isinstance(rank, int) else rank
                new_shape = self.shape(self.ch.integer(lo, hi), static, min_dim, max_dim)
            # A new parameter must satisfy ``pred`` too (pixel_shuffle's channels divisible
            # by the square of the factor): a random shape that does not is drawn again, or
            # a value in scope that does is taken, or the op is not sampled here at all.
            if pred is None or pred(Value("?", TensorTy(list(new_shape), dtype), *lo_hi,
                                          exact=True)):
                return self.new_param(new_shape, dtype, *lo_hi)
            if fixed:
                break
        if cands:
            return self.ch.choice(cands)
        raise ValueError("no value satisfies the op's precondition")

    def pick_broadcast(self, x: Value, dtypes: Sequence[str] = None, pred=None,
                       new_range=None) -> Value:
        """A value whose shape broadcasts with ``x`` (same dtype unless ``dtypes`` is given)."""
        dtypes = dtypes or (x.dtype,)
        from .catalogue.spec import broadcast_dims

        def ok(v):
            return (broadcast_dims(x.shape, v.shape) is not None
                    and (pred is None or pred(v)))

        cands = self.candidates(dtypes, None, ok)
        if cands and not self.ch.boolean(0.3):
            return self.ch.choice(cands)
        # A new parameter: x's shape with leading dims dropped and some dims set to 1.
        shape = list(x.shape[self.ch.integer(0, len(x.shape)):]) if self.ch.boolean(0.4) \
            else list(x.shape)
        shape = [1 if self.ch.boolean(0.2) else d for d in shape]
        if self.ch.boolean(0.15) and _numel_bound([2] + list(x.shape)) <= MAX_NUMEL:
            shape = [self.ch.choice([1, 2])] + list(x.shape)   # broadcast x up, too
        dtype = self.dtype(dtypes)
        lo_hi = new_range or default_range(dtype)
        return self.new_param(shape, dtype, *lo_hi)

    def add_node(self, op: str, args: list[str], attrs: dict, ty: Ty) -> Node:
        node = Node(self.fresh("v"), op, list(args), dict(attrs), ty)
        self.nodes.append(node)
        if self.guide is not None:
            src = self.producer.get(args[0]) if op == "get_item" and args else op
            if src is not None and (op == "get_item" or op not in STRUCTURAL_OPS):
                self.producer[node.name] = src
        return node

    def add_value(self, node: Node, lo: float, hi: float, exact: bool) -> Optional[Value]:
        if not isinstance(node.ty, TensorTy):
            return None
        v = Value(node.name, node.ty, lo, hi, exact)
        self.pool.append(v)
        return v


def _numel_bound(shape) -> int:
    # Symbolic dims are bound to at most 8 when inputs are made (fuzz.inputs).
    return math.prod(d if isinstance(d, int) else 8 for d in shape)


def _same_shape(a, b) -> bool:
    return a is not None and len(a) == len(b) and all(D.same(x, y) for x, y in zip(a, b))


# --- applying one op ------------------------------------------------------------------------
def apply_op(ctx: GenContext, spec: OpSpec) -> Optional[Node]:
    """Sample ``spec`` in ``ctx``; add its node (and tuple items) and return it, or None."""
    mark = (len(ctx.params), len(ctx.pool), ctx._n)
    ctx.op = spec.name
    try:
        got = spec.sample(ctx)
        if got is not None:
            ins, attrs = got
            out = spec.infer([v.ty for v in ins], attrs)
    except Exception:  # noqa: BLE001 - a spec bug must not end a campaign; the catalogue's
        got = None      # self-test reports a spec that cannot sample ("no-sample")
    finally:
        ctx.op = None
    if got is None:
        _rollback(ctx, mark)
        return None
    if not _type_ok(out):
        _rollback(ctx, mark)
        return None
    try:
        lo, hi = spec.interval(ins, attrs, out)
    except (ArithmeticError, ValueError):   # an interval rule meeting inf: bounds unknown
        lo, hi = -math.inf, math.inf
    if isinstance(out, TensorTy) and not within(out.dtype, lo, hi):
        if ctx.mode == "valid":   # would overflow or leave the op's domain downstream
            _rollback(ctx, mark)
            return None
    node = ctx.add_node(spec.name, [v.name for v in ins], attrs, out)
    ctx.last_op = spec.name
    exact = spec.exact(ins, attrs, out)
    if isinstance(out, TupleTy):
        for i, f in enumerate(out.fields):
            if isinstance(f, TensorTy) and ctx.ch.boolean(0.7 if i == 0 else 0.4):
                item = ctx.add_node("get_item", [node.name], {"index": i}, f)
                ctx.add_value(item, lo, hi, exact if not is_float(f.dtype) else False)
    else:
        ctx.add_value(node, lo, hi, exact)
    return node


def _type_ok(ty: Ty) -> bool:
    if isinstance(ty, TupleTy):
        return all(_type_ok(f) for f in ty.fields)
    return ty.shape is not None and _numel_bound(ty.shape) <= MAX_NUMEL and all(
        not isinstance(d, int) or d >= 0 for d in ty.shape)


def _rollback(ctx: GenContext, mark) -> None:
    np_, nv, _ = mark
    del ctx.params[np_:]
    del ctx.pool[nv:]


# --- whole programs ---------------------------------------------------------------------
@functools.lru_cache(maxsize=64)
def _op_table(ops: Optional[tuple]):
    specs = [CATALOGUE[o] for o in ops] if ops else list(CATALOGUE.values())
    return specs, list(itertools.accumulate(s.weight for s in specs))


CONTROL_SHARE = 0.25  # of programs with control flow (R.If, loops), fuzz.control
# A control step draws r in 0..99: R.If below 50, a loop below 75, a data-dependent shape or
# call_dps_packed below CALL_TIR_FROM, else R.call_tir to a generated PrimFunc (fuzz.calltir)
CALL_TIR_FROM = 92
REPEAT_SHARE = 0.05   # of generation steps: an op repeated with fresh constants, fuzz.motifs


def gen_function(ch: Chooser, name: str, n_ops: int, mode: str,
                 ops: Optional[Sequence[str]] = None,
                 callees: Sequence[Function] = (), guide=None,
                 control: Optional[list] = None, avoid_dtypes: Sequence[str] = ()) -> Function:
    """``control``: a list to add the functions control flow needs to (branches, loops);
    None: no control flow in this function."""
    ctx = GenContext(ch, mode, allow_sym=ch.boolean(0.4), guide=guide,
                     avoid_dtypes=avoid_dtypes)
    specs, cum = _op_table(tuple(ops) if ops else None)
    # Parameters with unknown shape reach ops only through match_cast in valid programs.
    if ch.boolean(0.1):
        _match_cast_param(ctx)
    made = 0
    tries = 0
    while made < n_ops and tries < n_ops * 8:
        tries += 1
        if callees and ch.boolean(0.15):
            if _call_function(ctx, ch.choice(list(callees))):
                made += 1
            continue
        if control is not None and ch.boolean(0.25):
            from . import control as C
            from .calltir import gen_call_tir
            from .dynshape import gen_dyn

            r = ch.integer(0, 99)
            if (C.gen_if(ctx, specs, cum, control, 1, name) if r < 50
                    else C.gen_loop(ctx, specs, cum, control, name) if r < 75
                    else gen_dyn(ctx) if r < CALL_TIR_FROM
                    else gen_call_tir(ctx)):
                made += 1
            continue
        if not ops and ctx.nodes and ch.boolean(REPEAT_SHARE):
            from .motifs import gen_repeat

            if gen_repeat(ctx):
                made += 1
            continue
        spec = ch.weighted_cum(specs, cum) if guide is None else \
            ch.weighted(specs, guide.op_weights(specs, ctx.last_op))
        if apply_op(ctx, spec) is not None:
            made += 1
    if not ctx.pool:
        ctx.pick(rank=(1, 2))
    ret = _outputs(ctx)
    blocks = _blocks(ctx, ret)
    return Function(name, ctx.params, blocks, ret)


def _match_cast_param(ctx: GenContext) -> None:
    dtype = ctx.dtype(FLOATS)
    rank = ctx.ch.integer(1, 3)
    shape = ctx.shape(rank)
    erased = ctx.ch.choice(["ndim", "none"])
    declared = TensorTy(None, dtype, rank if erased == "ndim" else -1)
    name = ctx.fresh("p")
    target = TensorTy(shape, dtype)
    lo, hi = (-2.0, 2.0)
    ctx.params.append(Param(name, declared, lo, hi, actual=target))
    node = ctx.add_node("match_cast", [name], {"ty": target.to_json()}, target)
    ctx.add_value(node, lo, hi, True)


def _call_function(ctx: GenContext, callee: Function) -> bool:
    args = []
    for p in callee.params:
        t = p.runtime_ty
        if not isinstance(t, TensorTy) or t.shape is None or not all(
                D.is_static(d) for d in t.shape):
            return False
        v = ctx.pick(dtypes=(t.dtype,), rank=len(t.shape), new_shape=t.shape,
                     pred=lambda v, p=p: p.lo <= v.lo and v.hi <= p.hi,
                     new_range=(p.lo, p.hi))
        args.append(v.name)
    ret_ty = callee.value_types()[callee.ret]
    node = ctx.add_node("call", args, {"func": callee.name}, ret_ty)
    if isinstance(ret_ty, TupleTy):
        for i, f in enumerate(ret_ty.fields):
            if isinstance(f, TensorTy):
                item = ctx.add_node("get_item", [node.name], {"index": i}, f)
                ctx.add_value(item, -math.inf, math.inf, False)
    else:
        ctx.add_value(node, -math.inf, math.inf, False)
    return True


def _outputs(ctx: GenContext) -> str:
    used = {a for n in ctx.nodes for a in n.args}
    values = [v for v in ctx.pool if v.name not in {p.name for p in ctx.params}] or ctx.pool
    sinks = [v for v in values if v.name not in used] or [values[-1]]
    outs = sinks[-3:] if ctx.ch.boolean(0.7) else sinks[-1:]
    if len(outs) == 1 and not ctx.ch.boolean(0.15):
        return outs[0].name
    node = ctx.add_node("tuple", [v.name for v in outs], {}, TupleTy([v.ty for v in outs]))
    return node.name


def _blocks(ctx: GenContext, ret: str) -> list[Block]:
    nodes = ctx.nodes
    r = ctx.ch.integer(0, 9)
    first_if = next((i for i, n in enumerate(nodes) if n.op == "if"), None)
    if first_if is not None:   # R.If is not allowed inside a dataflow block
        if r < 7 and first_if > 0:
            return [Block(True, nodes[:first_if]), Block(False, nodes[first_if:])]
        return [Block(False, nodes)]
    if r < 7 or len(nodes) < 2:
        return [Block(dataflow=r < 7, nodes=nodes)]
    cut = ctx.ch.integer(1, len(nodes) - 1)   # a dataflow block, then a plain one
    return [Block(True, nodes[:cut]), Block(False, nodes[cut:])]


def gen_program(ch: Chooser, n_ops: int = 10, mode: str = "valid",
                ops: Optional[Sequence[str]] = None, seed: Optional[int] = None,
                guide=None, avoid_dtypes: Sequence[str] = ()) -> Program:
    funcs: list[Function] = []
    if n_ops >= 4 and ch.boolean(0.15):
        k = ch.integer(2, max(2, n_ops // 3))
        funcs.append(gen_function(ch, "helper", k, "valid", ops, guide=guide,
                                  avoid_dtypes=avoid_dtypes))
        n_ops -= k
    # Not in programs drawn from a subset of the ops (ONNX cases: the exporter writes ops)
    control = [] if not ops and n_ops >= 2 and ch.boolean(CONTROL_SHARE) else None
    main = gen_function(ch, "main", n_ops, mode, ops, callees=funcs, guide=guide,
                        control=control, avoid_dtypes=avoid_dtypes)
    funcs += control or []
    prog = Program([main] + funcs, "main",
                   {"generator": GENERATOR_VERSION, "mode": mode, "seed": seed})
    if mode == "near-valid":
        from .mutate import mutate

        prog = mutate(prog, ch)
    return prog


def generate(seed: int, mode: str = "valid", n_ops: Optional[int] = None,
             ops: Optional[Sequence[str]] = None, guide=None,
             avoid_dtypes: Sequence[str] = ()) -> Program:
    """The program for ``seed``: deterministic for one generator version (and one ``guide``,
    a ``fuzz.coverage.Guide`` snapshot: a guided program is recorded ``meta["guided"]``, and
    its JSON, not its seed, is the case). ``avoid_dtypes``: dtypes new values are not given
    where an op allows others (``GenContext.avoid_dtypes``)."""
    ch = RandomChooser(seed * 1_000_003 + GENERATOR_VERSION)
    if n_ops is None:
        n_ops = ch.integer(1, 12)
    prog = gen_program(ch, n_ops, mode, ops, seed, guide, avoid_dtypes)
    if guide is not None:
        prog.meta["guided"] = True
    return prog


def single_op_program(op: str, ch: Chooser, allow_sym: Optional[bool] = None) -> Optional[Program]:
    """A valid program of one ``op`` (its inputs as parameters; tuple results gathered), for
    the catalogue self-check and the property tests."""
    ctx = GenContext(ch, "valid", allow_sym=ch.boolean(0.4) if allow_sym is None else allow_sym)
    node = None
    for _ in range(20):
        node = apply_op(ctx, CATALOGUE[op])
        if node is not None:
            break
    if node is None:
        return None
    items = [n for n in ctx.nodes if n.op == "get_item"]
    ret = node.name
    if isinstance(node.ty, TupleTy):
        if not items:
            return None
        ret = ctx.add_node("tuple", [n.name for n in items], {},
                           TupleTy([n.ty for n in items])).name
    f = Function("main", ctx.params, [Block(True, ctx.nodes)], ret)
    return Program([f], "main", {"generator": 0, "mode": "valid", "seed": None})


def call_tir_alone(seed: int) -> Optional[Program]:
    """A program of one call_tir (and the nodes making its arguments) returning its result,
    or None where no TIR case drawn is destination-passing: the construct by itself, for the
    validity bench and the tests."""
    from .calltir import gen_call_tir
    from .choice import RandomChooser

    ctx = GenContext(RandomChooser(seed), "valid", allow_sym=False)
    if not gen_call_tir(ctx):
        return None
    node = [n for n in ctx.nodes if n.op == "call_tir"][-1]
    f = Function("main", ctx.params, [Block(True, ctx.nodes)], node.name)
    return Program([f], "main", {"generator": 0, "mode": "valid", "seed": seed})


def slice_alone(seed: int):
    """A program of one ``dyn_slice`` (and the nodes making its vectors) of a new static
    parameter, returning the slice: the construct by itself, for the validity bench and the
    tests."""
    from . import dynshape

    ctx = GenContext(RandomChooser(seed), "valid", allow_sym=False)
    ch = ctx.ch
    ctx.new_param(ctx.shape(ch.integer(1, 4), static=True, max_dim=dynshape.MAX_FRESH),
                  ctx.dtype(["float32", "float16", "int32", "int64", "bool"]))
    dynshape.gen_slice(ctx)
    node = [n for n in ctx.nodes if n.op == "dyn_slice"][-1]
    f = Function("main", ctx.params, [Block(ch.boolean(0.7), ctx.nodes)], node.name)
    return Program([f], "main", {"generator": 0, "mode": "valid", "seed": seed})
