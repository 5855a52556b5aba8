"""The numpy reference for TIR programs: a plain interpreter of the model.

Scalars are numpy scalars, so arithmetic keeps TIR's dtype semantics: float32 math in float32,
integer wraparound, ``floordiv``/``floormod`` rounding toward minus infinity (numpy's ``//`` and
``%``, like TVM's), float->int casts truncating toward zero, casts to bool meaning ``!= 0``.
Loops run serially in program order: the generator only makes parallel and vectorized loops
whose iterations are independent, so any order gives the same result.

Every buffer is a view on flat storage (a param's array, or a temporary's), addressed with its
strides and element offset, so strided views alias their base param exactly as in TIR. Reading
an element of a temporary that was never written raises ``ReferenceError`` (the generator
promises it never happens), as does any index outside its buffer.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from .model import Alloc, Block, BufDecl, For, If, Let, Store, TirProgram, expr_nodes, walk


class ReferenceError(Exception):
    """The reference could not run the program (a generator defect or a near-valid case)."""


class _Buf:
    __slots__ = ("name", "arr", "init", "shape", "strides", "off")

    def __init__(self, name, arr, init, shape, strides, off):
        self.name, self.arr, self.init = name, arr, init
        self.shape, self.strides, self.off = shape, strides, off

    def flat(self, idx) -> int:
        if len(idx) != len(self.shape):
            raise ReferenceError(f"{self.name}: {len(idx)} indices for {len(self.shape)} dims")
        f = self.off
        for i, n, s in zip(idx, self.shape, self.strides):
            if not 0 <= i < n:
                raise ReferenceError(f"{self.name}: index {list(map(int, idx))} out of "
                                     f"bounds for shape {self.shape}")
            f += int(i) * s
        if not 0 <= f < self.arr.size:
            raise ReferenceError(f"{self.name}: element {f} outside its storage of "
                                 f"{self.arr.size}")
        return f


def _compact(shape) -> list[int]:
    return [math.prod(shape[k + 1:]) for k in range(len(shape))]


def _np(t: str):
    return np.dtype("bool" if t == "bool" else t).type


def cast(t: str, x):
    if t == "bool":
        return np.bool_(x != 0)
    if t.startswith("float"):
        return _np(t)(x)
    if isinstance(x, (float, np.floating)):
        return _np(t)(math.trunc(float(x)))
    return np.asarray(int(x)).astype(t)[()]      # integer narrowing wraps, as in LLVM


def _sigmoid(x):
    return type(x)(1.0 / (1.0 + math.exp(-float(x))))


_CALLS = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "tanh": np.tanh, "sin": np.sin,
          "cos": np.cos, "floor": np.floor, "fabs": np.abs, "abs": np.abs,
          "sigmoid": _sigmoid}


def _minf(a, b):
    return b if b < a else a


def _maxf(a, b):
    return b if b > a else a


_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": lambda a, b: a / b, "min": _minf, "max": _maxf,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "<": lambda a, b: np.bool_(a < b), "<=": lambda a, b: np.bool_(a <= b),
    ">": lambda a, b: np.bool_(a > b), ">=": lambda a, b: np.bool_(a >= b),
    "==": lambda a, b: np.bool_(a == b), "!=": lambda a, b: np.bool_(a != b),
    "and": lambda a, b: np.bool_(bool(a) and bool(b)),
    "or": lambda a, b: np.bool_(bool(a) or bool(b)),
}


class _Interp:
    def __init__(self, prog: TirProgram, storage: dict[str, np.ndarray],
                 unset: frozenset = frozenset()):
        self.prog = prog
        self.bufs: dict[str, _Buf] = {}
        for p in prog.params:
            arr = storage[p.name]
            if isinstance(p.strides, list) and p.strides != _compact(p.shape):
                raise ReferenceError(f"{p.name}: strides {p.strides} but the caller passes "
                                     f"compact arrays")
            if isinstance(p.elem_offset, int) and p.elem_offset != 0:
                raise ReferenceError(f"{p.name}: elem_offset {p.elem_offset} but the caller "
                                     f"passes arrays at offset 0")
            init = np.zeros(arr.size, bool) if p.name in unset else None
            self.bufs[p.name] = _Buf(p.name, arr, init, list(p.shape), _compact(p.shape), 0)

    # --- expressions compile to closures over the environment -----------------------------
    def cexpr(self, e):
        k = e[0]
        if k == "const":
            v = cast(e[1], e[2])
            return lambda env: v
        if k == "var":
            name = e[1]
            return lambda env: env[name]
        if k == "load":
            name, idx = e[1], [self.cexpr(i) for i in e[2]]
            bufs = self.bufs

            def ld(env):
                b = bufs[name]
                f = b.flat([i(env) for i in idx])
                if b.init is not None and not b.init[f]:
                    raise ReferenceError(f"{name}: read of uninitialised element {f}")
                return b.arr[f]
            return ld
        if k == "bin":
            fn, a, b = _BIN[e[1]], self.cexpr(e[2]), self.cexpr(e[3])
            return lambda env: fn(a(env), b(env))
        if k == "not":
            a = self.cexpr(e[1])
            return lambda env: np.bool_(not a(env))
        if k == "cast":
            t, a = e[1], self.cexpr(e[2])
            return lambda env: cast(t, a(env))
        if k == "select":
            c, a, b = (self.cexpr(x) for x in e[1:])

            def sel(env):
                cv, av, bv = c(env), a(env), b(env)    # Select evaluates both sides
                return av if cv else bv
            return sel
        if k == "ite":
            c, a, b = (self.cexpr(x) for x in e[1:])
            return lambda env: a(env) if c(env) else b(env)
        if k == "call":
            fn, a = _CALLS[e[1]], self.cexpr(e[2])
            return lambda env: fn(a(env))
        raise ReferenceError(f"unknown expression {e!r:.60}")

    # --- statements compile to closures too -------------------------------------------------
    def cstmts(self, ss):
        fs = [self.cstmt(s) for s in ss]

        def run(env):
            for f in fs:
                f(env)
        return run

    def cstmt(self, s):
        if isinstance(s, For):
            v, n, body = s.var, s.extent, self.cstmts(s.body)

            def loop(env):
                for i in range(n):
                    env[v] = i
                    body(env)
            return loop
        if isinstance(s, Store):
            name, idx, val = s.buf, [self.cexpr(i) for i in s.indices], self.cexpr(s.value)
            bufs = self.bufs

            def st(env):
                x = val(env)
                b = bufs[name]
                f = b.flat([i(env) for i in idx])
                b.arr[f] = x
                if b.init is not None:
                    b.init[f] = True
            return st
        if isinstance(s, If):
            c, then = self.cexpr(s.cond), self.cstmts(s.then)
            other = self.cstmts(s.else_) if s.else_ is not None else None

            def branch(env):
                if c(env):
                    then(env)
                elif other is not None:
                    other(env)
            return branch
        if isinstance(s, Let):
            v, t, val, body = s.var, s.dtype, self.cexpr(s.value), self.cstmts(s.body)

            def let(env):
                env[v] = cast(t, val(env))
                body(env)
            return let
        if isinstance(s, Alloc):
            return self.calloc(s.buf)
        if isinstance(s, Block):
            return self.cblock(s)
        raise ReferenceError(f"unknown statement {type(s).__name__}")

    def calloc(self, b: BufDecl):
        bufs = self.bufs
        if b.how == "view":
            if b.base not in bufs or not isinstance(b.elem_offset, (int, type(None))) \
                    or not isinstance(b.strides, (list, type(None))):
                raise ReferenceError(f"{b.name}: unsupported view")
            strides = b.strides if b.strides is not None else _compact(b.shape)
            off = b.elem_offset or 0

            def view(env):
                base = bufs[b.base]
                bufs[b.name] = _Buf(b.name, base.arr, base.init, list(b.shape), strides, off)
            return view
        dt = np.dtype("bool" if b.dtype == "bool" else b.dtype)

        def alloc(env):     # fresh storage each time the Alloc runs: nothing is initialised
            bufs[b.name] = _Buf(b.name, np.zeros(b.numel, dt), np.zeros(b.numel, bool),
                                list(b.shape), _compact(b.shape), 0)
        return alloc

    def cblock(self, s: Block):
        binds = [(iv.name, iv.kind, self.cexpr(iv.binding)) for iv in s.iter_vars]
        where = self.cexpr(s.where) if s.where is not None else None
        init = self.cstmts(s.init) if s.init is not None else None
        body = self.cstmts(s.body)
        extents = {iv.name: iv.extent for iv in s.iter_vars}

        def block(env):
            vals = [(n, k, f(env)) for n, k, f in binds]
            if where is not None and not where(env):
                return
            for n, k, v in vals:
                if not 0 <= v < extents[n]:
                    raise ReferenceError(f"block {s.name}: {n} = {v} outside [0, {extents[n]})")
                env[n] = v
            if init is not None and all(v == 0 for n, k, v in vals if k == "R"):
                init(env)
            body(env)
        return block


def run(prog: TirProgram, inputs: dict[str, np.ndarray],
        unset: frozenset = frozenset()) -> dict[str, np.ndarray]:
    """Every param's final contents after running ``prog`` on ``inputs`` (TIR writes in
    place, so outputs are params too). ``inputs`` are compact arrays; they are not changed.
    ``unset``: params whose contents are undefined when the function starts (a
    destination-passing caller's fresh outputs): reading an element before it is written,
    or leaving one unwritten, is a ``ReferenceError``."""
    storage = {}
    for p in prog.params:
        if p.name not in inputs:
            raise ReferenceError(f"no input for {p.name}")
        a = np.asarray(inputs[p.name])
        if list(a.shape) != list(p.shape):
            raise ReferenceError(f"{p.name}: input shape {a.shape} != {p.shape}")
        storage[p.name] = np.array(a, dtype=_np(p.dtype), copy=True).reshape(-1)
    interp = _Interp(prog, storage, frozenset(unset))
    try:
        f = interp.cstmts(prog.body)
        with np.errstate(all="ignore"):
            f({})
        for name in unset:
            init = interp.bufs[name].init
            if not init.all():
                raise ReferenceError(f"{name}: element {int(np.argmin(init))} is never written")
    except ReferenceError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError,
            OverflowError) as e:
        raise ReferenceError(f"{type(e).__name__}: {e}") from e
    return {p.name: storage[p.name].reshape(p.shape) for p in prog.params}


def _range(prog: TirProgram, p: BufDecl) -> tuple:
    r = prog.meta.get("inputs", {}).get(p.name)
    if r:
        return r["lo"], r["hi"], r.get("q", 0)
    if p.dtype == "bool":
        return 0, 1, 0
    if p.dtype.startswith("float"):
        return -2.0, 2.0, 3
    return (0, 8, 0) if p.dtype.startswith("uint") else (-8, 8, 0)


def make_inputs(prog: TirProgram, seed: int = 0) -> dict[str, np.ndarray]:
    """Compact arrays for every param (outputs too: TIR updates them in place), drawn in the
    range ``meta["inputs"]`` gives; floats are multiples of 2**-q so they are exact."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in prog.params:
        lo, hi, q = _range(prog, p)
        if p.dtype == "bool":
            a = rng.random(p.shape) < 0.5
        elif p.dtype.startswith("float"):
            s = 2 ** q
            a = (rng.integers(math.ceil(lo * s), math.floor(hi * s) + 1, p.shape) / s)
        else:
            a = rng.integers(int(lo), int(hi) + 1, p.shape)
        out[p.name] = np.ascontiguousarray(a.astype(_np(p.dtype)))
    return out


TOL = {"float16": (2e-2, 5e-2), "float32": (1e-4, 1e-4), "float64": (1e-7, 1e-7)}
_LEVELS = ("float16", "float32", "float64")


def precision(prog: TirProgram) -> dict[str, str]:
    """For each buffer, the least precise float dtype its values may have been computed in:
    a float32 output fed by float16 math is only as exact as float16. Conservative (a float16
    constant anywhere in a stored value counts), and integers never lose precision: the
    generator computes them from exact values only."""
    dtype, storage = {}, {}
    for b in list(prog.params) + prog.allocs():
        dtype[b.name] = b.dtype
        storage[b.name] = b.base if b.how == "view" and b.base else b.name
    for s in walk(prog.body):          # plain-loop accumulators are Allocs too; Lets below
        if isinstance(s, Let):
            dtype.setdefault(s.var, s.dtype)
    level = {n: _LEVELS.index(t) if t in _LEVELS else 3 for n, t in dtype.items()}

    def of(e) -> int:
        lv = 3
        for x in expr_nodes(e):
            if x[0] in ("const", "cast") and x[1] in _LEVELS:
                lv = min(lv, _LEVELS.index(x[1]))
            elif x[0] == "load" and x[1] in storage:
                lv = min(lv, level[storage[x[1]]])
            elif x[0] == "var" and x[1] in level:
                lv = min(lv, level[x[1]])
        return lv

    writes = [s for s in walk(prog.body) if isinstance(s, (Store, Let))]
    for _ in range(len(writes) + 1):   # to a fixed point: values flow through buffers
        changed = False
        for s in writes:
            dst = s.var if isinstance(s, Let) else storage.get(s.buf, s.buf)
            if dst not in level or level[dst] == 3 and dtype.get(dst) not in _LEVELS:
                continue
            lv = min(level[dst], of(s.value))
            if lv < level[dst]:
                level[dst], changed = lv, True
        if not changed:
            break
    return {n: _LEVELS[level[storage[n]]] for n in storage if level[storage[n]] < 3}


def tolerance(prog: TirProgram, name: str) -> tuple[float, float]:
    """(rtol, atol) for buffer ``name``: exact for integers and bool (every integer result is
    computed from exact values by construction), else by the least precise float dtype its
    values went through (float16 loose)."""
    t = precision(prog).get(name)
    return TOL.get(t, (0.0, 0.0))


def first_mismatch(prog: TirProgram, got: dict, want: dict) -> Optional[str]:
    """None when ``got`` agrees with ``want`` for every param, else one line on the first
    buffer that differs."""
    for name, w in want.items():
        if name not in got:
            return f"{name}: missing from the result"
        g = np.asarray(got[name])
        w = np.asarray(w)
        if g.shape != w.shape:
            return f"{name}: shape {g.shape} != {w.shape}"
        rtol, atol = tolerance(prog, name)
        if w.dtype.kind == "f":
            gf, wf = g.astype(np.float64), w.astype(np.float64)
            ok = np.isclose(gf, wf, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = g == w
        if not ok.all():
            bad = np.argwhere(~ok)
            i = tuple(int(x) for x in bad[0])
            return (f"{name}{list(i)}: got {g[i]!r} want {w[i]!r} ({w.dtype}, rtol={rtol}, "
                    f"atol={atol}); {len(bad)} of {w.size} elements differ")
    return None
