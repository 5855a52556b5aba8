"""The numpy reference: runs a program model with each op's catalogue reference, and says how
closely TVM's results must match (the numeric oracle's expectations)."""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np

from . import dims as D
from .catalogue import CATALOGUE
from .catalogue.spec import DEFAULT_TOL, cast, is_float, np_dtype
from .model import Function, Program, TensorTy, TupleTy, ty_from_json


class ReferenceError(Exception):
    """The reference could not run the program (a generator or catalogue defect)."""


MAX_DEPTH = 200   # calls deep (a recursive loop function): past it the program does not end


def run_function(program: Program, f: Function, args: list, env: dict, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ReferenceError(f"{f.name}: more than {MAX_DEPTH} nested calls")
    vals: dict[str, Any] = {p.name: a for p, a in zip(f.params, args)}
    env = dict(env)
    for n in f.nodes():
        xs = [vals[a] for a in n.args]
        try:
            vals[n.name] = _eval(program, n, xs, env, depth)
        except ReferenceError:
            raise
        except Exception as e:  # noqa: BLE001 - any numpy failure is a catalogue defect
            raise ReferenceError(f"{n.op} ({n.name}): {type(e).__name__}: {e}") from e
    return vals[f.ret]


def _eval(program, n, xs, env, depth=0):
    if n.op == "if":
        # Only the branch taken runs, as in the VM.
        then, other = program.branches(n)
        return run_function(program, then if bool(np.asarray(xs[0])) else other, xs[1:], env,
                            depth + 1)
    if n.op == "dps_copy":
        return np.array(xs[0], copy=True)
    if n.op == "call_tir":   # the PrimFunc's own reference (fuzz.tir.reference)
        from .calltir import run as run_call_tir

        return run_call_tir(n, xs)
    if n.op == "shape_tensor":
        return np.array(np.asarray(xs[0]).shape, dtype=np.int64)
    if n.op == "reshape_dyn":
        want = [int(v) for v in np.asarray(xs[1])]
        for d, v in zip(n.attrs["dims"], want):
            if env.setdefault(d, v) != v:
                raise ReferenceError(f"reshape_dyn {n.name}: {d} is {env[d]} and {v}")
        return np.asarray(xs[0]).reshape(want)
    if n.op == "dyn_slice":   # numpy's slice; its extents must be what the type promised
        x, (b, e, s) = np.asarray(xs[0]), (np.asarray(v).tolist() for v in xs[1:])
        if not len(b) == len(e) == len(s) == x.ndim or 0 in s:
            raise ReferenceError(f"dyn_slice {n.name}: begin {b}, end {e}, strides {s} "
                                 f"for rank {x.ndim}")
        out = x[tuple(slice(*t) for t in zip(b, e, s))]
        for d, v in zip(n.ty.shape, out.shape):
            if isinstance(d, str) and D.free_vars(d) == [d] and d not in env:
                env[d] = v
            elif D.evaluate(d, env) != v:
                raise ReferenceError(f"dyn_slice {n.name}: shape {out.shape} != {n.ty.shape}")
        return out.copy()
    if n.op == "tuple":
        return tuple(xs)
    if n.op == "get_item":
        return xs[0][int(n.attrs["index"])]
    if n.op == "call":
        return run_function(program, program.func(n.attrs["func"]), xs, env, depth + 1)
    if n.op == "match_cast":
        t = ty_from_json(n.attrs["ty"])
        x = xs[0]
        if t.shape is not None:
            if len(t.shape) != x.ndim:
                raise ReferenceError(f"match_cast {n.name}: rank {x.ndim} != {len(t.shape)}")
            for d, s in zip(t.shape, x.shape):
                if isinstance(d, str) and D.free_vars(d) == [d] and d not in env:
                    env[d] = s
                elif D.evaluate(d, env) != s:
                    raise ReferenceError(f"match_cast {n.name}: shape {x.shape} != {t.shape}")
        return x
    if n.op == "const":
        t = ty_from_json(n.attrs["ty"])
        return np.full([D.evaluate(d, env) for d in t.shape], n.attrs["value"],
                       dtype=np_dtype(t.dtype))
    spec = CATALOGUE[n.op]
    out = spec.reference(xs, n.attrs, env=env) if spec.uses_env else spec.reference(xs, n.attrs)
    return _conform(out, n.ty, env)


def _conform(out, ty, env):
    """Cast to the dtype the shape rule promised; check its shape, too."""
    if isinstance(ty, TupleTy):
        return tuple(_conform(o, t, env) for o, t in zip(out, ty.fields))
    out = cast(out, ty.dtype)
    if ty.shape is not None:
        want = tuple(D.evaluate(d, env) for d in ty.shape)
        if out.shape != want:
            raise ReferenceError(f"reference gave shape {out.shape}, shape rule {want}")
    return out


def run(program: Program, args: list, env: dict) -> Any:
    return run_function(program, program.main, args, env)


def flatten(x) -> list:
    if isinstance(x, (tuple, list)):
        return [y for item in x for y in flatten(item)]
    return [x]


# --- tolerances ---------------------------------------------------------------------------
def tolerance(program: Program, dtype: str, cone: Optional[set] = None) -> tuple[float, float]:
    """The loosest (rtol, atol) of the ops an output depends on (``cone``: their node names;
    all nodes when None). Error accumulates along chains, and a float64 output computed from
    float16 intermediates is only as exact as float16, so the tolerance of every float dtype
    met along the way applies."""
    if not is_float(dtype):
        return (0.0, 0.0)
    nodes = [n for f in program.functions for n in f.nodes()
             if cone is None or f.name != program.entry or n.name in cone]
    dtypes = {dtype} | {t.dtype for n in nodes for t in _tensor_tys(n.ty) if is_float(t.dtype)}
    # A PrimFunc's float outputs are as exact as the least precise float math they went
    # through (fuzz.tir.reference.precision)
    from .calltir import precision as tir_precision

    dtypes |= {d for n in nodes if n.op == "call_tir" for d in tir_precision(n)}
    rtol = max(DEFAULT_TOL[d][0] for d in dtypes)
    atol = max(DEFAULT_TOL[d][1] for d in dtypes)
    for n in nodes:
        if n.op == "call_tir":   # and the TIR judge's tolerance for them
            from .tir.reference import TOL as TIR_TOL

            for d in tir_precision(n) | {t.dtype for t in _tensor_tys(n.ty)}:
                t = TIR_TOL.get(d)
                if t:
                    rtol, atol = max(rtol, t[0]), max(atol, t[1])
        spec = CATALOGUE.get(n.op)
        for d in dtypes if spec else ():
            t = spec.tol.get(d)
            if t:
                rtol, atol = max(rtol, t[0]), max(atol, t[1])
    return rtol, atol


def _tensor_tys(ty) -> list:
    if isinstance(ty, TupleTy):
        return [t for f in ty.fields for t in _tensor_tys(f)]
    return [ty] if isinstance(ty, TensorTy) else []


def cone(program: Program, name: str) -> set:
    """The names of the entry function's nodes that ``name`` depends on (itself included)."""
    nodes = {n.name: n for n in program.main.nodes()}
    out, todo = set(), [name]
    while todo:
        x = todo.pop()
        if x in out or x not in nodes:
            continue
        out.add(x)
        todo.extend(nodes[x].args)
    return out


def output_nodes(program: Program) -> list[str]:
    """The names of the values behind the flattened outputs of the entry function."""
    f = program.main
    nodes = {n.name: n for n in f.nodes()}

    def walk(name):
        n = nodes.get(name)
        if n is not None and n.op == "tuple":
            return [x for a in n.args for x in walk(a)]
        return [name]

    return walk(f.ret)


def numeric_key(program: Program, index: int) -> str:
    """What a numeric difference is about, for its signature: the op that made the output,
    followed through tuple items and into a called helper function (whose op made it, not
    the ``call``)."""
    names = output_nodes(program)
    n = _producer(program, program.main, names[index]) if index < len(names) else None
    if n is None:
        return "param"
    ty = n.ty if isinstance(n.ty, TensorTy) else None
    return f"{n.op}:{ty.dtype if ty else ''}"


PROBE = "probe_all"   # the name of the tuple a probe program returns


def probe_program(program: Program, index: int) -> Optional[tuple[Program, list[str]]]:
    """A copy of ``program`` whose entry returns, in program order, every tensor value that
    output ``index`` depends on (itself included), and those values' names: running it shows
    the first op whose own result is wrong (its inputs all right). None when there is nothing
    to choose between (one op) or the values are not all tensors that can be returned."""
    from .model import Block, Node

    names = output_nodes(program)
    if index >= len(names):
        return None
    c = cone(program, names[index])
    picked = [n for n in program.main.nodes() if n.name in c and n.op not in ("tuple", "const")
              and isinstance(n.annot or n.ty, TensorTy)]
    if len(picked) < 2 or not program.main.blocks:
        return None
    probe = program.copy()
    f = probe.main
    tys = [n.annot or n.ty for n in picked]
    f.blocks.append(Block(False, [Node(PROBE, "tuple", [n.name for n in picked], {},
                                       TupleTy(tys))]))
    f.ret = PROBE
    return probe, [n.name for n in picked]


def value_key(program: Program, name: str) -> str:
    """``numeric_key`` of the entry function's value ``name``: its op and dtype."""
    n = _producer(program, program.main, name)
    if n is None:
        return "param"
    ty = n.ty if isinstance(n.ty, TensorTy) else None
    return f"{n.op}:{ty.dtype if ty else ''}"


def _producer(program: Program, func, name: str, field: Optional[int] = None, depth: int = 0):
    """The node of a catalogue op behind value ``name`` of ``func`` (its tuple field
    ``field``), or None for a parameter."""
    nodes = {n.name: n for n in func.nodes()}
    n = nodes.get(name)
    while n is not None and depth < 64:
        depth += 1
        if n.op == "get_item":
            if field is not None:   # an item of an item: the op that made the outer tuple
                return _producer(program, func, n.args[0], None, depth)
            n, field = nodes.get(n.args[0]), int(n.attrs["index"])
        elif n.op == "tuple" and field is not None and field < len(n.args):
            n, field = nodes.get(n.args[field]), None
        elif n.op == "call":
            callee = program.func(n.attrs["func"])
            return _producer(program, callee, callee.ret, field, depth)
        else:
            return n
    return n


def compare(program: Program, expected: list[np.ndarray], actual: list[np.ndarray]):
    """None when the outputs agree, else (output index, one-line description)."""
    diff = _compare(program, expected, actual)
    if diff is None:
        return None
    m = re.match(r"output (\d+)", diff)
    return (int(m.group(1)) if m else 0), diff


def _compare(program: Program, expected: list[np.ndarray], actual: list[np.ndarray]):
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        e = np.asarray(e)
        a = np.asarray(a)
        if e.shape != a.shape:
            return f"output {i}: shape {a.shape}, expected {e.shape}"
        dt = "bfloat16" if "bfloat16" in str(e.dtype) else str(e.dtype)
        if is_float(dt):
            names = output_nodes(program)
            rtol, atol = tolerance(program, dt, cone(program, names[i]) if i < len(names) else None)
            ef, af = e.astype(np.float64), a.astype(np.float64)
            ok = np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=True)
            if not ok.all():
                j = np.unravel_index(np.argmin(ok), ok.shape) if ok.ndim else ()
                return (f"output {i} ({dt}): {int((~ok).sum())}/{ok.size} differ; at {tuple(map(int, j))}"
                        f" got {af[j]!r}, expected {ef[j]!r} (rtol={rtol}, atol={atol})")
        else:
            if not np.array_equal(e, a):
                bad = e != a
                j = np.unravel_index(np.argmax(bad), bad.shape) if bad.ndim else ()
                return (f"output {i} ({dt}): {int(bad.sum())}/{bad.size} differ; at "
                        f"{tuple(map(int, j))} got {a[j]!r}, expected {e[j]!r}")
    return None
