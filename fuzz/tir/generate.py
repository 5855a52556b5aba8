"""The TIR generator: ``generate_tir(seed)`` builds a ``TirProgram`` from a ``Chooser``.

Valid by construction, so cases reach TVM's lowering and codegen instead of the parser:

* every index is in bounds: an index is a loop/iteration variable whose range fits the dim, or
  is made to fit (``floormod``, ``min``, a shift, a constant); loops longer than a dim are
  guarded by an ``If`` (plain loops) or ``T.where`` (blocks);
* value ranges travel with every expression as (lo, hi, q): division only by values away from
  0, ``log`` of positives, ``sqrt`` of non-negatives, ``exp`` of bounded values, and integer
  results that stay inside their dtype (LLVM's ``nsw`` makes overflow undefined);
* ``q`` says the value is an exact multiple of 2**-q (inputs are multiples of 1/8): such floats
  are computed without rounding, so TVM's reassociation or float16-in-float32 cannot change
  them, and only they reach discontinuous ops (comparisons, floor, float->int casts);
* every nest writes each element of its target from one iteration (parallel loops write
  disjoint elements; reductions and scans run in serial loops), reads only storage it does not
  write (except the element it is updating), and temporaries are written whole before a later
  nest reads them. Params start with defined contents (``reference.make_inputs`` fills outputs
  too), so a partial write of an output is deterministic.

Near-valid mode breaks one promise of a valid program and records why in ``meta["invalid"]``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from ..choice import Chooser, RandomChooser
from . import TIR_GENERATOR_VERSION
from .model import (Alloc, Block, BufDecl, For, If, IterVar, Let, Store, TirProgram, binop,
                    call, cast, const, expr_nodes, ite, load, not_, select, var)

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "uint8", "int32", "int64")
MANT = {"float16": 11, "float32": 24, "float64": 53}
# Magnitudes kept well inside each float dtype, so tolerances stay meaningful.
FMAX = {"float16": 1.0e4, "float32": 1.0e7, "float64": 1.0e9}
IRANGE = {"int8": (-128, 127), "uint8": (0, 255), "int32": (-2**31, 2**31 - 1),
          "int64": (-2**63, 2**63 - 1), "bool": (0, 1)}
DTYPE_WEIGHTS = {"float32": 6, "float16": 1.2, "float64": 1.2, "int32": 2, "int64": 1,
                 "int8": 1, "uint8": 1, "bool": 0.6}
MAX_BUF = 512        # elements per buffer
MAX_WORK = 4000      # loop iterations per program: keeps the Python reference fast
QUANT = 3            # float inputs and constants are multiples of 2**-QUANT


def is_float(t: str) -> bool:
    return t in FLOATS


@dataclass
class Iv:
    """Bounds of a value; ``q`` not None: an exact multiple of 2**-q, computed without
    rounding (so bit-identical in numpy and TVM whatever TVM reorders)."""
    lo: float
    hi: float
    q: Optional[int] = 0


def fits(t: str, lo, hi) -> bool:
    if is_float(t):
        return -FMAX[t] <= lo and hi <= FMAX[t]
    a, b = IRANGE[t]
    return a <= lo and hi <= b


def exact_q(t: str, lo, hi, q) -> Optional[int]:
    if not is_float(t):
        return 0
    if q is None or q > 20:
        return None
    return q if max(abs(lo), abs(hi)) * 2 ** q < 2 ** MANT[t] else None


def _hull(a: Iv, b: Iv) -> Iv:
    q = None if a.q is None or b.q is None else max(a.q, b.q)
    return Iv(min(a.lo, b.lo), max(a.hi, b.hi), q)


@dataclass
class Scope:
    """What an expression may use: index values (int32 expr, lo, hi), let variables, readable
    buffers, and the one element of the target it may read (the element it updates)."""
    idx: list = field(default_factory=list)
    lets: list = field(default_factory=list)     # (name, dtype, Iv)
    bufs: list = field(default_factory=list)
    selfs: list = field(default_factory=list)    # (buf, indices)

    def child(self, **kw) -> "Scope":
        s = Scope(list(self.idx), list(self.lets), list(self.bufs), list(self.selfs))
        for k, v in kw.items():
            setattr(s, k, v)
        return s


class TirGen:
    def __init__(self, ch: Chooser, mode: str = "valid", features: Optional[dict] = None):
        self.ch = ch
        self.mode = mode
        self.features = dict(features or {})
        self.bufs: dict[str, BufDecl] = {}
        self.storage: dict[str, str] = {}      # buffer -> the storage it lives in
        self.iv: dict[str, Iv] = {}            # storage -> values it may hold
        self.ready: dict[str, bool] = {}       # storage -> fully written (temps) / has inputs
        self.params: list[BufDecl] = []
        self.top: list = []                    # function-scope Allocs
        self.body: list = []
        self.inputs: dict[str, dict] = {}
        self.work = 0
        self._n = 0

    # --- names and basic choices ----------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def dtype(self, allow_bool: bool = True) -> str:
        ds = [d for d in DTYPE_WEIGHTS if allow_bool or d != "bool"]
        return self.ch.weighted(ds, [DTYPE_WEIGHTS[d] for d in ds])

    def shape(self, max_numel: int = 256) -> list[int]:
        rank = self.ch.weighted([1, 2, 3], [3, 4, 2])
        dims = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 32]
        w = [1.5, 2, 2, 3, 1, 1, 1, 2.5, 0.5, 1, 1.5, 0.5, 0.7]
        for _ in range(6):
            s = [self.ch.weighted(dims, w) for _ in range(rank)]
            if math.prod(s) <= max_numel:
                return s
        return [self.ch.integer(1, 8)]

    def add_buf(self, b: BufDecl, storage: Optional[str] = None) -> None:
        self.bufs[b.name] = b
        self.storage[b.name] = storage or b.name

    # --- params, views, temporaries ---------------------------------------------------------
    def make_params(self) -> list[str]:
        n = self.ch.weighted([1, 2, 3, 4], [1, 3, 3, 2])
        n_out = 2 if n >= 3 and self.ch.boolean(0.3) else 1
        outs = []
        for k in range(n):
            is_out = k >= n - n_out
            t = self.dtype(allow_bool=self.ch.boolean(0.4))
            b = BufDecl(f"p{k}", self.shape(), t)
            if self.ch.boolean(0.4):
                self._match_buffer(b)
            self.add_buf(b)
            self.params.append(b)
            lo, hi = self._input_range(t)
            self.inputs[b.name] = {"lo": lo, "hi": hi, "q": QUANT if is_float(t) else 0}
            self.iv[b.name] = Iv(lo, hi, QUANT if is_float(t) else 0)
            self.ready[b.name] = True
            if is_out:
                outs.append(b.name)
        if self.ch.boolean(0.3):
            outs.extend(self._view(self.ch.choice(self.params), outs))
        if self.features.get("axis_separators"):
            for b in self.params:
                if b.how == "match_buffer" and len(b.shape) >= 2 and self.ch.boolean(0.3):
                    b.axis_separators = self._separators(len(b.shape))
                    # A flattened buffer with separators takes one offset per physical axis.
                    b.elem_offset, b.offset_factor = None, 0
        return outs

    def _input_range(self, t: str) -> tuple:
        if t == "bool":
            return (0, 1)
        positive = self.ch.boolean(0.3)
        if is_float(t):
            return (0.25, 2.0) if positive else (-2.0, 2.0)
        if t == "uint8":
            return (1, 8) if positive else (0, 8)
        return (1, 8) if positive else (-8, 8)

    def _match_buffer(self, b: BufDecl) -> None:
        b.how = "match_buffer"
        # The caller passes compact arrays, so strides are compact ints or symbolic, and the
        # element offset 0 or symbolic (bound to 0 at run time).
        r = self.ch.integer(0, 9)
        if r < 3:
            b.strides = "sym"
        elif r < 5:
            b.strides = [math.prod(b.shape[k + 1:]) for k in range(len(b.shape))]
        b.elem_offset = self.ch.weighted([None, 0, "sym"], [4, 2, 2])
        b.offset_factor = self.ch.weighted([0, 1, 2, 4, 16], [4, 1, 1, 1, 1])

    def _separators(self, ndim: int) -> list[int]:
        k = self.ch.integer(1, ndim - 1)
        return sorted(self.ch.sample(list(range(1, ndim)), k))

    def _view(self, base: BufDecl, outs: list[str]) -> list[str]:
        """Make ``base`` a flat buffer and declare a strided view over part of it."""
        shape = self.shape(max_numel=96)
        order = list(range(len(shape)))[::-1]      # innermost first
        if len(shape) > 1 and self.ch.boolean(0.2):
            order = self.ch.sample(order, len(order))    # not row-major: still one-to-one
        strides = [0] * len(shape)
        s = self.ch.weighted([1, 2, 3], [6, 1, 0.5])
        for k in order:                 # non-overlapping: each stride covers the dims inside
            strides[k] = s
            s = s * shape[k] + self.ch.weighted([0, 1, 3], [4, 1, 1])
        foot = sum((d - 1) * st for d, st in zip(shape, strides)) + 1
        off = self.ch.weighted([0, self.ch.integer(1, 8)], [1, 1])
        size = off + foot + self.ch.integer(0, 4)
        if size > MAX_BUF:
            return []
        base.shape = [size]
        if isinstance(base.strides, list):
            base.strides = [1]
        base.axis_separators = None
        of = self.ch.weighted([0, 1, 2, 4], [3, 1, 1, 1])
        if of and off % of:
            of = 1
        w = BufDecl(self.fresh("w"), shape, base.dtype, how="view", strides=strides,
                    elem_offset=off, offset_factor=of, base=base.name)
        self.add_buf(w, storage=base.name)
        self.top.append(Alloc(w, "decl_buffer"))
        # The view is written instead of its base when the base is an output.
        return [w.name] if base.name in outs and self.ch.boolean(0.6) else []

    def temp(self, max_numel: int = 256) -> str:
        b = BufDecl(self.fresh("t"), self.shape(max_numel), self.dtype(), how="alloc",
                    scope=self.ch.weighted(["global", "local"], [2, 1]))
        if self.features.get("axis_separators") and len(b.shape) >= 2 and self.ch.boolean(0.2):
            b.axis_separators = self._separators(len(b.shape))
        self.add_buf(b)
        self.ready[b.name] = False
        self.top.append(Alloc(b, self.ch.choice(["alloc_buffer", "decl_buffer"])))
        return b.name

    def readable(self, writing: str) -> list[str]:
        return [n for n, st in self.storage.items()
                if self.ready.get(st) and st != writing and st in self.iv]

    # --- expressions ----------------------------------------------------------------------
    def expr(self, t: str, depth: int, sc: Scope):
        if depth > 0 and not self.ch.boolean(0.2):
            for _ in range(3):
                got = self._op(t, depth, sc)
                if got is not None:
                    return got
        return self.leaf(t, sc)

    def exact_expr(self, t: str, depth: int, sc: Scope):
        e, iv = self.expr(t, depth, sc)
        if iv.q is None:
            e, iv = self.leaf(t, sc, exact=True)
        if iv.q is None:
            e, iv = self.constant(t)
        return e, iv

    def leaf(self, t: str, sc: Scope, exact: bool = False):
        lets = [x for x in sc.lets if x[1] == t and (x[2].q is not None or not exact)]
        opts = ["const", "idx", "load", "let"]
        w = [1.5 if t != "bool" else 0.5, 1.5 if sc.idx else 0,
             5 if sc.bufs or sc.selfs else 0, 3 if lets else 0]
        k = self.ch.weighted(opts, w)
        if k == "let":
            name, _, iv = self.ch.choice(lets)
            return var(name), iv
        if k == "load":
            got = self.load_leaf(t, sc, exact)
            if got is not None:
                return got
        if k == "idx" or (k == "load" and sc.idx and self.ch.boolean(0.5)):
            e, lo, hi = self.ch.choice(sc.idx)
            if t == "bool" and self.ch.boolean(0.8):
                c = self.ch.integer(lo, hi)
                return binop(self.ch.choice(["<", "==", ">="]), e, const("int32", c)), Iv(0, 1, 0)
            got = self.coerce(e, Iv(lo, hi, 0), "int32", t)
            if got is not None:
                return got
        return self.constant(t)

    def constant(self, t: str, lo: float = -4, hi: float = 4):
        if t == "bool":
            v = self.ch.boolean()
            return const(t, v), Iv(int(v), int(v), 0)
        if is_float(t):
            v = self.ch.integer(int(lo * 2 ** QUANT), int(hi * 2 ** QUANT)) / 2 ** QUANT
            return const(t, v), Iv(v, v, QUANT)
        a, b = IRANGE[t]
        v = self.ch.integer(max(a, int(lo)), min(b, int(hi)))
        return const(t, v), Iv(v, v, 0)

    def load_leaf(self, t: str, sc: Scope, exact: bool = False):
        if sc.selfs and self.ch.boolean(0.3):
            buf, idx = self.ch.choice(sc.selfs)
            got = self.coerce(load(buf, idx), self.iv[self.storage[buf]], self.bufs[buf].dtype, t)
            if got is not None and (got[1].q is not None or not exact):
                return got
        cands = [b for b in sc.bufs if self.iv[self.storage[b]].q is not None or not exact]
        if not cands:
            return None
        same = [b for b in cands if self.bufs[b].dtype == t]
        b = self.ch.choice(same) if same and self.ch.boolean(0.75) else self.ch.choice(cands)
        d = self.bufs[b]
        iv = self.iv[self.storage[b]]
        wide = [x for x in sc.idx if x[1] >= 0 and len(d.shape) == 1 and x[2] >= d.shape[0]]
        if wide and self.ch.boolean(0.15):
            # A load only in bounds under its guard: if_then_else must not evaluate it.
            e, lo, hi = self.ch.choice(wide)
            cond = binop("<", e, const("int32", d.shape[0]))
            other, oiv = self.constant(d.dtype, 0, 1)
            got = self.coerce(ite(cond, load(b, [e]), other), _hull(iv, oiv), d.dtype, t)
            if got is not None:
                return got
        idx = [self.index(n, sc) for n in d.shape]
        return self.coerce(load(b, idx), iv, d.dtype, t)

    def index(self, d: int, sc: Scope, depth: int = 1):
        """An int32 expression whose value is always in [0, d - 1]."""
        fit = [x for x in sc.idx if x[1] >= 0 and x[2] <= d - 1]
        nonneg = [x for x in sc.idx if x[1] >= 0]
        k = self.ch.weighted(["var", "shift", "rev", "mod", "min", "div", "const", "gather"],
                             [8 if fit else 0, 1 if fit else 0, 0.7 if fit else 0,
                              1.5 if nonneg else 0, 0.7 if nonneg else 0,
                              0.7 if nonneg else 0, 1, 0.5 if depth > 0 else 0])
        c32 = lambda v: const("int32", v)  # noqa: E731
        if k == "var":
            best = [x for x in fit if x[2] == d - 1]
            return (self.ch.choice(best) if best and self.ch.boolean(0.8) else
                    self.ch.choice(fit))[0]
        if k == "shift":
            e, lo, hi = self.ch.choice(fit)
            if hi < d - 1:
                return binop("+", e, c32(self.ch.integer(1, d - 1 - hi)))
            return e
        if k == "rev":
            e, lo, hi = self.ch.choice(fit)
            return binop("-", c32(d - 1), e)
        if k == "mod":
            e, lo, hi = self.ch.choice(nonneg)
            if self.ch.boolean(0.3):
                e = binop("+", e, c32(self.ch.integer(1, 5)))
            return binop("floormod", e, c32(d))
        if k == "min":
            e, lo, hi = self.ch.choice(nonneg)
            return binop("min", e, c32(d - 1))
        if k == "div":
            e, lo, hi = self.ch.choice(nonneg)
            c = self.ch.choice([2, 3, 4])
            if hi // c <= d - 1:
                return binop("floordiv", e, c32(c))
            return binop("floormod", binop("floordiv", e, c32(c)), c32(d))
        if k == "gather":
            ints = [b for b in sc.bufs if self.bufs[b].dtype in INTS]
            if ints:
                b = self.ch.choice(ints)
                bd = self.bufs[b]
                e = load(b, [self.index(n, sc, depth - 1) for n in bd.shape])
                if bd.dtype != "int32":
                    e = cast("int32", e)
                return binop("floormod", e, c32(d))
        return c32(self.ch.integer(0, d - 1))

    def coerce(self, e, iv: Iv, s: str, t: str):
        """``e`` (dtype ``s``) as dtype ``t``, or None where the cast would be undefined or
        discontinuous on an inexact value."""
        if s == t:
            return e, iv
        if s == "bool":
            return cast(t, e), Iv(0, 1, 0)
        if t == "bool":
            if is_float(s) and iv.q is None:
                return None
            return cast(t, e), Iv(0, 1, 0)
        if not is_float(s):
            if is_float(t):
                if max(abs(iv.lo), abs(iv.hi)) >= 2 ** MANT[t] or not fits(t, iv.lo, iv.hi):
                    return None
            elif not fits(t, iv.lo, iv.hi):
                return None
            return cast(t, e), Iv(iv.lo, iv.hi, 0)
        if not is_float(t):         # float -> int truncates toward zero
            if iv.q is None:
                return None
            lo, hi = math.trunc(iv.lo), math.trunc(iv.hi)
            if not fits(t, lo, hi) or (t == "uint8" and iv.lo <= -1):
                return None
            return cast(t, e), Iv(lo, hi, 0)
        if not fits(t, iv.lo, iv.hi):
            return None
        return cast(t, e), Iv(iv.lo, iv.hi, exact_q(t, iv.lo, iv.hi, iv.q))

    def _op(self, t: str, depth: int, sc: Scope):
        ch = self.ch
        if t == "bool":
            k = ch.weighted(["cmp", "andor", "not", "cast"], [4, 1.5, 0.5, 0.5])
            if k == "cmp":
                s = ch.choice([t2 for t2 in ("float32", "int32", "float16", "int8", "float64",
                                             "uint8", "int64")])
                s = s if ch.boolean(0.6) else ch.choice(["float32", "int32"])
                a, ia = self.exact_expr(s, depth - 1, sc)
                b, ib = self.exact_expr(s, depth - 1, sc)
                return binop(ch.choice(["<", "<=", ">", ">=", "==", "!="]), a, b), Iv(0, 1, 0)
            if k == "andor":
                a, _ = self.expr("bool", depth - 1, sc)
                b, _ = self.expr("bool", depth - 1, sc)
                return binop(ch.choice(["and", "or"]), a, b), Iv(0, 1, 0)
            if k == "not":
                a, _ = self.expr("bool", depth - 1, sc)
                return not_(a), Iv(0, 1, 0)
            s = ch.choice(INTS + FLOATS)
            a, ia = self.expr(s, depth - 1, sc)
            if not _has_load(a) and ch.boolean(0.8):
                # TVM folds a cast to bool of a constant wrongly (see build.known_bug): kept
                # rare so it does not drown other findings.
                got = self.load_leaf(s, sc, exact=True)
                if got is None:
                    return None
                a, ia = got
            return self.coerce(a, ia, s, t)
        kinds = ["arith", "minmax", "select", "ite", "cast"]
        w = [4, 1.5, 1, 0.5, 1.2]
        if is_float(t):
            kinds += ["div", "call"]
            w += [0.7, 2.5]
        else:
            kinds += ["divmod", "abs"]
            w += [1.5, 0.3]
        k = ch.weighted(kinds, w)
        if k in ("arith", "minmax"):
            op = ch.choice(["+", "-", "*"] if k == "arith" else ["min", "max"])
            a, ia = self.expr(t, depth - 1, sc)
            b, ib = self.expr(t, depth - 1, sc)
            if op == "*":
                cs = [ia.lo * ib.lo, ia.lo * ib.hi, ia.hi * ib.lo, ia.hi * ib.hi]
                q = None if ia.q is None or ib.q is None else ia.q + ib.q
            elif op in ("min", "max"):
                cs = [min(ia.lo, ib.lo), max(ia.hi, ib.hi)]
                q = _hull(ia, ib).q
            else:
                cs = ([ia.lo + ib.lo, ia.hi + ib.hi] if op == "+"
                      else [ia.lo - ib.hi, ia.hi - ib.lo])
                q = _hull(ia, ib).q
            lo, hi = min(cs), max(cs)
            if not fits(t, lo, hi):
                return None
            return binop(op, a, b), Iv(lo, hi, exact_q(t, lo, hi, q))
        if k in ("select", "ite"):
            c, _ = self.expr("bool", depth - 1, sc)
            a, ia = self.expr(t, depth - 1, sc)
            b, ib = self.expr(t, depth - 1, sc)
            return (select if k == "select" else ite)(c, a, b), _hull(ia, ib)
        if k == "cast":
            s = ch.choice([d for d in DTYPE_WEIGHTS if d != t])
            a, ia = self.expr(s, depth - 1, sc)
            return self.coerce(a, ia, s, t)
        if k == "div":
            a, ia = self.expr(t, depth - 1, sc)
            b, ib = self.expr(t, depth - 1, sc)
            if not (ib.lo >= 0.25 or ib.hi <= -0.25):
                b, ib = self.constant(t, 0.25, 4)
                if ib.lo == 0:
                    return None
            m = max(abs(ia.lo), abs(ia.hi)) / min(abs(ib.lo), abs(ib.hi))
            if not fits(t, -m, m):
                return None
            cs = [x / y for x in (ia.lo, ia.hi) for y in (ib.lo, ib.hi)]
            return binop("/", a, b), Iv(min(cs), max(cs), None)
        if k == "divmod":
            a, ia = self.expr(t, depth - 1, sc)
            b, ib = self.expr(t, depth - 1, sc)
            if ib.lo <= 0 <= ib.hi:
                lo = 1 if t == "uint8" or ch.boolean(0.8) else -8
                b, ib = self.constant(t, lo, 8)
                if ib.lo == 0:
                    b, ib = const(t, 3), Iv(3, 3, 0)
            if ch.boolean(0.5):
                cs = [x // y for x in (ia.lo, ia.hi) for y in (ib.lo, ib.hi)]
                lo, hi, op = min(cs), max(cs), "floordiv"
            else:
                lo, hi, op = ((0, ib.hi - 1) if ib.lo > 0 else (ib.lo + 1, 0)) + ("floormod",)
            if not fits(t, lo, hi):
                return None
            return binop(op, a, b), Iv(lo, hi, 0)
        if k == "abs":
            a, ia = self.expr(t, depth - 1, sc)
            lo, hi = (0 if ia.lo <= 0 <= ia.hi else min(abs(ia.lo), abs(ia.hi)),
                      max(abs(ia.lo), abs(ia.hi)))
            if not fits(t, lo, hi):
                return None
            return call("abs", a), Iv(lo, hi, 0)
        return self._call(t, depth, sc)

    def _call(self, t: str, depth: int, sc: Scope):
        fn = self.ch.weighted(["exp", "log", "sqrt", "tanh", "sin", "cos", "floor", "fabs",
                               "sigmoid"], [1, 1, 1, 1, 0.7, 0.7, 1, 0.8, 0.8])
        a, ia = self.expr(t, depth - 1, sc)
        if fn == "exp":
            if ia.hi > 4:
                return None
            return call(fn, a), Iv(math.exp(ia.lo) if ia.lo > -50 else 0.0, math.exp(ia.hi),
                                   None)
        if fn == "log":
            if ia.lo < 0.125:
                a = binop("+", call("fabs", a), const(t, 0.5))
                ia = Iv(0.5, max(abs(ia.lo), abs(ia.hi)) + 0.5, None)
            return call(fn, a), Iv(math.log(ia.lo), math.log(ia.hi), None)
        if fn == "sqrt":
            if ia.lo < 0:
                a, ia = call("fabs", a), Iv(0, max(abs(ia.lo), abs(ia.hi)), ia.q)
            return call(fn, a), Iv(math.sqrt(ia.lo), math.sqrt(ia.hi), None)
        if fn in ("sin", "cos"):
            if max(abs(ia.lo), abs(ia.hi)) > 64:
                return None
            return call(fn, a), Iv(-1, 1, None)
        if fn == "tanh":
            return call(fn, a), Iv(-1, 1, None)
        if fn == "sigmoid":
            return call(fn, a), Iv(0, 1, None)
        if fn == "floor":
            if ia.q is None:
                return None
            return call(fn, a), Iv(math.floor(ia.lo), math.floor(ia.hi), 0)
        lo = 0 if ia.lo <= 0 <= ia.hi else min(abs(ia.lo), abs(ia.hi))
        return call("fabs", a), Iv(lo, max(abs(ia.lo), abs(ia.hi)), ia.q)

    # --- loop nests -----------------------------------------------------------------------
    def loops_for(self, shape: list[int]):
        """Loops covering ``shape``: [var, extent] outermost first, one (expr, lo, hi) per
        dim, and the guards that keep padded or split loops inside the dims."""
        loops, dims, guards = [], [], []
        k = 0
        c32 = lambda v: const("int32", v)  # noqa: E731
        while k < len(shape):
            s = shape[k]
            r = self.ch.integer(0, 99)
            if r < 15 and k + 1 < len(shape):
                s2 = shape[k + 1]
                f = self.fresh("i")
                loops.append([f, s * s2])
                dims.append((binop("floordiv", var(f), c32(s2)), 0, s - 1))
                dims.append((binop("floormod", var(f), c32(s2)), 0, s2 - 1))
                k += 2
                continue
            if r < 30 and s >= 3:
                fac = self.ch.choice([x for x in (2, 3, 4, 8) if x < s])
                o, u = self.fresh("i"), self.fresh("i")
                loops += [[o, -(-s // fac)], [u, fac]]
                e = binop("+", binop("*", var(o), c32(fac)), var(u))
                if s % fac:
                    guards.append(binop("<", e, c32(s)))
                dims.append((e, 0, s - 1))
            elif r < 40:
                v = self.fresh("i")
                loops.append([v, s + self.ch.integer(1, 3)])
                guards.append(binop("<", var(v), c32(s)))
                dims.append((var(v), 0, s - 1))
            else:
                v = self.fresh("i")
                loops.append([v, s])
                dims.append((var(v), 0, s - 1))
            k += 1
        return loops, dims, guards

    def kinds(self, loops: list, spatial: set, inner_loops: bool = False) -> list[str]:
        """Loop kinds: parallel only outermost and spatial, vectorized only innermost and
        spatial (a reduction or scan loop is never either)."""
        kinds = ["serial"] * len(loops)
        if loops[0][0] in spatial and self.ch.boolean(0.3):
            kinds[0] = "parallel"
        last = len(loops) - 1
        if (loops[last][0] in spatial and kinds[last] == "serial" and not inner_loops
                and 2 <= loops[last][1] <= 16 and self.ch.boolean(0.3)):
            kinds[last] = "vectorized"
        for i, (_, ext) in enumerate(loops):
            if kinds[i] == "serial" and ext <= 8 and self.ch.boolean(0.15):
                kinds[i] = "unroll"
        return kinds

    def wrap(self, loops: list, kinds: list[str], body: list) -> list:
        for (v, ext), kind in reversed(list(zip(loops, kinds))):
            body = [For(v, ext, kind, body)]
        return body

    def written(self, tgt: str, iv: Iv, whole: bool) -> None:
        st = self.storage[tgt]
        # A temp's first nest writes it whole; params keep their initial values elsewhere.
        if self.ready.get(st) or not whole:
            iv = _hull(self.iv.get(st, iv), iv)
        self.iv[st] = Iv(iv.lo, iv.hi, exact_q(self.bufs[tgt].dtype, iv.lo, iv.hi, iv.q))
        self.ready[st] = True

    def nest(self, tgt: str) -> None:
        d = self.bufs[tgt]
        n = d.numel
        r = self.ch.integer(0, 99)
        if r < 12 and len(d.shape) == 1 and d.shape[0] >= 2:
            self.nest_scan(tgt)
        elif r < 40 and MAX_WORK - self.work >= 2 * n:
            self.nest_reduce(tgt)
        else:
            self.nest_map(tgt)

    def nest_map(self, tgt: str) -> None:
        d = self.bufs[tgt]
        st = self.storage[tgt]
        loops, dims, guards = self.loops_for(d.shape)
        in_block = self.ch.boolean(0.5)
        sc = Scope(bufs=self.readable(st))
        if in_block:
            ivs = [IterVar(self.fresh("v"), "S", n, e) for n, (e, _, _) in zip(d.shape, dims)]
            sc.idx = [(var(iv.name), 0, iv.extent - 1) for iv in ivs]
            idx = [var(iv.name) for iv in ivs]
        else:
            sc.idx = list(dims) + [(var(v), 0, ext - 1) for v, ext in loops
                                   if all(var(v) != e for e, _, _ in dims)]
            idx = [e for e, _, _ in dims]
        if self.ready.get(st):
            sc.selfs = [(tgt, idx)]
        body, iv, whole, inner = self.map_body(tgt, idx, sc, in_block)
        if in_block:
            where = _and_all(guards) if guards else None
            body = [Block(self.fresh("b"), ivs, None, body, where)]
        elif guards:
            body = [If(_and_all(guards), body)]
        self.work += math.prod(ext for _, ext in loops) * (1 + inner)
        kinds = self.kinds(loops, {v for v, _ in loops}, inner_loops=inner > 0)
        self.body += self.wrap(loops, kinds, body)
        self.written(tgt, iv, whole)

    def map_body(self, tgt: str, idx: list, sc: Scope, in_block: bool):
        t = self.bufs[tgt].dtype
        depth = self.ch.integer(1, 4)
        pre: list = []
        inner = 0
        m = self.ch.integer(2, 8)
        if self.ch.boolean(0.15) and self.work + self.bufs[tgt].numel * (2 + m) <= MAX_WORK:
            # A small temporary local to one iteration (one block instance).
            tb = BufDecl(self.fresh("t"), [m], self.dtype(), how="alloc",
                         scope=self.ch.weighted(["local", "global"], [3, 1]))
            j = self.fresh("j")
            val, tiv = self.expr(tb.dtype, depth, sc.child(idx=sc.idx + [(var(j), 0, m - 1)]))
            kind = self.ch.weighted(["serial", "unroll", "vectorized"], [3, 1, 1])
            pre = [Alloc(tb, "alloc_buffer" if in_block else "decl_buffer"),
                   For(j, m, kind, [Store(tb.name, [var(j)], val)])]
            self.add_buf(tb)
            self.iv[tb.name] = Iv(tiv.lo, tiv.hi, exact_q(tb.dtype, tiv.lo, tiv.hi, tiv.q))
            self.ready[tb.name] = True
            sc = sc.child(bufs=sc.bufs + [tb.name])
            inner = m
        whole = True
        r = self.ch.integer(0, 99)
        if r < 20:
            tx = self.dtype()
            x = self.fresh("x")
            xv, xiv = self.expr(tx, depth, sc)
            sc2 = sc.child(lets=sc.lets + [(x, tx, xiv)])
            val, iv = self.expr(t, depth, sc2)
            if ["var", x] not in _subexprs(val) and self.ch.boolean(0.7):
                got = self.coerce(var(x), xiv, tx, t)     # an unused let tests little
                val, iv = got if got is not None else (val, iv)
            form = "scalar" if self.ch.boolean(0.1) else "let"
            stmts = [Let(x, tx, xv, [Store(tgt, idx, val)], form)]
        elif r < 38:
            c, _ = self.expr("bool", self.ch.integer(1, 2), sc)
            a, ia = self.expr(t, depth, sc)
            partial = self.storage[tgt] in self.inputs and self.ch.boolean(0.3)
            if partial:
                stmts, iv, whole = [If(c, [Store(tgt, idx, a)])], ia, False
            else:
                b, ib = self.expr(t, depth, sc)
                stmts, iv = [If(c, [Store(tgt, idx, a)], [Store(tgt, idx, b)])], _hull(ia, ib)
        else:
            val, iv = self.expr(t, depth, sc)
            stmts = [Store(tgt, idx, val)]
        if pre:
            self.ready[pre[0].buf.name] = False       # out of scope after this nest
        return pre + stmts, iv, whole, inner

    def nest_reduce(self, tgt: str) -> None:
        d = self.bufs[tgt]
        t = d.dtype
        kmax = min(64, (MAX_WORK - self.work) // max(d.numel, 1))
        n_r = 2 if kmax >= 8 and self.ch.boolean(0.3) else 1
        rext = [self.ch.integer(2, max(2, min(16, int(kmax ** (1 / n_r)))))
                for _ in range(n_r)]
        K = math.prod(rext)
        sp = [[self.fresh("i"), n] for n in d.shape]
        rd = [[self.fresh("k"), n] for n in rext]
        in_block = self.ch.boolean(0.6)
        loops = sp + rd
        if in_block and self.ch.boolean(0.2):
            loops = rd + sp if self.ch.boolean(0.5) else sp[:1] + rd + sp[1:]
        op = self.ch.weighted(["+", "max", "min"], [3, 1, 1]) if t != "bool" else \
            self.ch.choice(["and", "or"])
        sc = Scope(bufs=self.readable(self.storage[tgt]))
        depth = self.ch.integer(1, 3)
        if in_block:
            svs = [IterVar(self.fresh("v"), "S", n, var(v)) for v, n in sp]
            rvs = [IterVar(self.fresh("r"), "R", n, var(k)) for k, n in rd]
            sidx = [var(iv.name) for iv in svs]
            sc.idx = [(var(iv.name), 0, iv.extent - 1) for iv in svs]
            init, iiv = self._init_value(t, op, sc)
            sc.idx += [(var(iv.name), 0, iv.extent - 1) for iv in rvs]
            e, eiv = self._reduced(t, depth, sc)
            acc_iv = _accumulate(t, op, iiv, eiv, K)
            if acc_iv is None:
                op, acc_iv = ("max", _accumulate(t, "max", iiv, eiv, K)) if t != "bool" \
                    else ("or", Iv(0, 1, 0))
            upd = Store(tgt, sidx, _combine(op, load(tgt, sidx), e))
            body = [Block(self.fresh("b"), svs + rvs, [Store(tgt, sidx, init)], [upd])]
        else:
            sidx = [var(v) for v, _ in sp]
            sc.idx = [(var(v), 0, n - 1) for v, n in sp]
            init, iiv = self._init_value(t, op, sc)
            sc.idx += [(var(k), 0, n - 1) for k, n in rd]
            e, eiv = self._reduced(t, depth, sc)
            acc_iv = _accumulate(t, op, iiv, eiv, K)
            if acc_iv is None:
                op, acc_iv = ("max", _accumulate(t, "max", iiv, eiv, K)) if t != "bool" \
                    else ("or", Iv(0, 1, 0))
            rkinds = [self.ch.weighted(["serial", "unroll"], [4, 1]) for _ in rd]
            if self.ch.boolean(0.4):
                acc = BufDecl(self.fresh("t"), [1], t, how="alloc",
                              scope=self.ch.weighted(["local", "global"], [3, 1]))
                a0 = [const("int32", 0)]
                inner = self.wrap(rd, rkinds, [Store(acc.name, a0,
                                                     _combine(op, load(acc.name, a0), e))])
                body = [Alloc(acc, "decl_buffer"), Store(acc.name, a0, init)] + inner + \
                    [Store(tgt, sidx, load(acc.name, a0))]
            else:
                body = [Store(tgt, sidx, init)] + self.wrap(
                    rd, rkinds, [Store(tgt, sidx, _combine(op, load(tgt, sidx), e))])
            loops = sp
        spatial = {v for v, _ in sp}
        kinds = self.kinds(loops, spatial, inner_loops=not in_block)
        if in_block:
            kinds = [k if v in spatial or k in ("serial", "unroll") else "serial"
                     for (v, _), k in zip(loops, kinds)]
        self.work += d.numel * K
        self.body += self.wrap(loops, kinds, body)
        self.written(tgt, acc_iv, True)

    def _reduced(self, t: str, depth: int, sc: Scope):
        """The reduced value; a constant one makes a dull reduction, so it gets a retry."""
        e, iv = self.expr(t, depth, sc)
        if not any(x[0] in ("load", "var") for x in _subexprs(e)):
            e, iv = self.expr(t, depth, sc)
        return e, iv

    def _init_value(self, t: str, op: str, sc: Scope):
        if self.ch.boolean(0.3):
            return self.expr(t, 1, sc)
        if t == "bool":
            v = op == "and"
            return const(t, v), Iv(int(v), int(v), 0)
        if op == "+":
            return const(t, 0 if not is_float(t) else 0.0), Iv(0, 0, 0)
        if is_float(t):
            v = -64.0 if op == "max" else 64.0
        else:
            a, b = IRANGE[t]
            v = max(a, -64) if op == "max" else min(b, 64)
        return const(t, v), Iv(v, v, 0)

    def nest_scan(self, tgt: str) -> None:
        """tgt[0] = e0; tgt[j + 1] = tgt[j] op e(j): a loop-carried dependence, always serial."""
        d = self.bufs[tgt]
        t = d.dtype
        n = d.shape[0]
        st = self.storage[tgt]
        sc = Scope(bufs=self.readable(st))
        e0, i0 = self.expr(t, 1, sc)
        j = self.fresh("j")
        c32 = lambda v: const("int32", v)  # noqa: E731
        nxt = binop("+", var(j), c32(1))
        sc.idx = [(var(j), 0, n - 2), (nxt, 1, n - 1)]
        e, eiv = self.expr(t, self.ch.integer(1, 3), sc)
        op = self.ch.weighted(["+", "max", "min"], [3, 1, 1]) if t != "bool" else "or"
        acc = _accumulate(t, op, i0, eiv, n - 1)
        if acc is None:
            op, acc = ("max", _accumulate(t, "max", i0, eiv, n - 1)) if t != "bool" \
                else ("or", Iv(0, 1, 0))
        kind = self.ch.weighted(["serial", "unroll"], [4, 1]) if n - 1 <= 16 else "serial"
        self.body += [Store(tgt, [c32(0)], e0),
                      For(j, n - 1, kind, [Store(tgt, [nxt],
                                                 _combine(op, load(tgt, [var(j)]), e))])]
        self.work += n
        self.written(tgt, acc, True)

    # --- whole programs -------------------------------------------------------------------
    def program(self, seed) -> TirProgram:
        outs = self.make_params()
        n_nests = max(len(outs), self.ch.weighted([1, 2, 3], [3, 4, 3]))
        targets = []
        for _ in range(n_nests - len(outs)):
            targets.append(self.temp() if self.ch.boolean(0.75) else self.ch.choice(outs))
        targets += outs
        for tg in targets:
            self.nest(tg)
        outputs = sorted({self.storage[o] for o in outs})
        meta = {"generator": TIR_GENERATOR_VERSION, "seed": seed, "mode": self.mode,
                "inputs": self.inputs, "outputs": outputs}
        if self.features:
            meta["features"] = self.features
        return TirProgram("main", self.params, self.top + self.body, meta)


def _and_all(conds: list):
    e = conds[0]
    for c in conds[1:]:
        e = binop("and", e, c)
    return e


def _combine(op: str, acc, e):
    return binop(op, acc, e)


def _accumulate(t: str, op: str, init: Iv, e: Iv, k: int) -> Optional[Iv]:
    """Bounds of ``init op e_1 op ... op e_k``, or None where it could overflow."""
    if op in ("and", "or"):
        return Iv(0, 1, 0)
    if op == "+":
        lo = init.lo + k * min(e.lo, 0)
        hi = init.hi + k * max(e.hi, 0)
    else:
        lo, hi = min(init.lo, e.lo), max(init.hi, e.hi)
    if not fits(t, lo, hi):
        return None
    q = _hull(init, e).q
    return Iv(lo, hi, exact_q(t, lo, hi, q))


def _has_load(e) -> bool:
    return any(x[0] == "load" for x in expr_nodes(e))


def _subexprs(e) -> list:
    return list(expr_nodes(e))


# --- near-valid mutations ---------------------------------------------------------------------
def _mutate(prog: TirProgram, ch: Chooser, features: dict) -> TirProgram:
    """Break one promise of a valid program; ``meta["invalid"]`` says which."""
    views = [b for b in prog.allocs() if b.how == "view"]
    multi = [b for b in prog.params + views if len(b.shape) >= 2]
    opts = ["neg_offset", "offset_factor"]
    if multi:
        opts.append("small_stride")
    if features.get("axis_separators"):
        opts += ["sep"] * 3
    k = ch.choice(opts)
    before = {b.name: layout_of(b) for b in prog.params + prog.allocs()}
    if k == "sep":
        ones = [b for b in prog.params + prog.allocs() if len(b.shape) == 1 and b.how != "view"]
        b = ch.choice(prog.params + [x for x in prog.allocs() if x.how == "alloc"])
        nd = len(b.shape)
        if ones and ch.boolean(0.4):
            b = ch.choice(ones)
            b.axis_separators = [1]
            why = f"{b.name}: 1-D buffer with axis_separators=[1]"
        elif nd >= 3 and ch.boolean(0.5):
            b.axis_separators = [2, 1]
            why = f"{b.name}: axis_separators [2, 1] not sorted"
        else:
            b.axis_separators = [nd + ch.integer(0, 1)]
            why = f"{b.name}: axis_separator {b.axis_separators[0]} >= ndim {nd}"
        if b.how == "param":
            b.how = "match_buffer"     # axis_separators go on match_buffer/alloc_buffer
    elif k == "small_stride":
        b = ch.choice(multi)
        inner = b.shape[-1]
        b.strides = [1] * len(b.shape)
        b.strides[-2] = max(0, inner - 1 - ch.integer(0, 1))
        if b.how == "param":
            b.how = "match_buffer"
        why = f"{b.name}: stride {b.strides[-2]} smaller than the inner extent {inner}"
    elif k == "neg_offset":
        b = ch.choice(views or prog.params)
        b.elem_offset = -ch.integer(1, 4)
        if b.how == "param":
            b.how = "match_buffer"
        why = f"{b.name}: negative elem_offset {b.elem_offset}"
    else:
        b = ch.choice(views or prog.params)
        f = ch.choice([2, 4, 8])
        b.elem_offset = (b.elem_offset if isinstance(b.elem_offset, int) else 0) + 1
        while b.elem_offset % f == 0:
            b.elem_offset += 1
        b.offset_factor = f
        if b.how == "param":
            b.how = "match_buffer"
        why = f"{b.name}: offset_factor {f} does not divide elem_offset {b.elem_offset}"
    if b.how == "view":     # the mutation alone breaks it: keep the footprint inside the base
        base = prog.param(b.base)
        strides = b.strides if isinstance(b.strides, list) else [1] * len(b.shape)
        foot = sum((d - 1) * st for d, st in zip(b.shape, strides)) + 1
        base.shape = [max(base.shape[0], max(b.elem_offset, 0) + foot)]
    prog.meta["invalid"] = why
    # What the malformed buffer was: repaired() puts it back, to tell a failure the
    # malformation causes from one the program has anyway.
    prog.meta["valid_layout"] = {"buffer": b.name, **before[b.name]}
    return prog


_LAYOUT = ("how", "strides", "elem_offset", "offset_factor", "axis_separators")


def layout_of(b) -> dict:
    return {f: getattr(b, f) for f in _LAYOUT}


def repaired(prog: TirProgram):
    """A near-valid mutant with its malformed buffer's layout put back (``meta["valid_layout"]``,
    recorded by the mutation); "absent" where that buffer is no longer in the program (a
    reduction removed it); None where nothing was recorded (an older case)."""
    rec = (prog.meta or {}).get("valid_layout")
    if not rec:
        return None
    fixed = prog.copy()
    for b in fixed.params + fixed.allocs():
        if b.name == rec["buffer"]:
            for f in _LAYOUT:
                setattr(b, f, rec.get(f))
            fixed.meta.pop("invalid", None)
            fixed.meta.pop("valid_layout", None)
            return fixed
    return "absent"


def generate_tir(seed: int, mode: str = "valid", features: Optional[dict] = None) -> TirProgram:
    """The TIR program for ``seed``: deterministic for one ``TIR_GENERATOR_VERSION``.

    ``mode`` is "valid" or "near_valid"; ``features`` may hold {"axis_separators": True}
    (TVM 0.25 only)."""
    if mode not in ("valid", "near_valid"):
        raise ValueError(f"unknown mode {mode!r}")
    features = dict(features or {})
    ch = RandomChooser(seed * 1_000_003 + 7919 * TIR_GENERATOR_VERSION)
    prog = TirGen(ch, mode, features).program(seed)
    if mode == "near_valid":
        prog = _mutate(prog, ch, features)
    return prog


def generate_tir_bounds(seed: int) -> tuple[TirProgram, dict]:
    """``generate_tir(seed)`` (valid, no features) and, per output, what the generator knows
    of the values it may hold: ``{name: (lo, hi, exact)}`` (``exact``: computed without
    rounding from inputs that are multiples of 2**-QUANT). A Relax program calling the
    PrimFunc (``fuzz.calltir``) types its results' ranges with them."""
    ch = RandomChooser(seed * 1_000_003 + 7919 * TIR_GENERATOR_VERSION)
    gen = TirGen(ch, "valid", {})
    prog = gen.program(seed)
    bounds = {}
    for name in prog.meta["outputs"]:
        iv = gen.iv[name]
        bounds[name] = (iv.lo, iv.hi, iv.q is not None)
    return prog, bounds
