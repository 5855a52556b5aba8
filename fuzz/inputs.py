"""Concrete inputs for a program: values for symbolic dims, then one array per parameter."""
from __future__ import annotations

import numpy as np

from . import dims as D
from .catalogue.spec import np_dtype
from .model import Program, TensorTy, TupleTy, ty_vars


def bind_dims(program: Program, rng: np.random.Generator) -> dict[str, int]:
    names = sorted({v for f in program.functions for p in f.params
                    for v in ty_vars(p.runtime_ty)}
                   | {v for f in program.functions for n in f.nodes() if n.op == "match_cast"
                      for v in ty_vars(n.ty)})
    # Dims a data-dependent shape defines (fuzz.dynshape) have the value the data gives them.
    known = {k: int(v) for f in program.functions for n in f.nodes()
             if n.op in ("match_cast", "reshape_dyn", "dyn_slice")
             for k, v in (n.attrs.get("known") or {}).items()}
    # 1 is common on purpose: broadcasting and squeeze edges live there.
    return {n: known[n] if n in known else int(rng.choice([1, 2, 3, 4, 5, 8]))
            for n in sorted(set(names) | set(known))}


def make_array(ty: TensorTy, lo: float, hi: float, env: dict, rng) -> np.ndarray:
    shape = tuple(D.evaluate(d, env) for d in ty.shape)
    dt = ty.dtype
    if dt == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.startswith(("int", "uint")):
        return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(dt)
    return rng.uniform(lo, hi, size=shape).astype(np_dtype(dt))


def make_inputs(program: Program, seed: int = 0):
    """(env, arrays) for the entry function; deterministic from ``seed``."""
    rng = np.random.default_rng(seed)
    env = bind_dims(program, rng)
    arrays = []
    for p in program.main.params:
        t = p.runtime_ty
        if isinstance(t, TupleTy) or t.shape is None:
            raise ValueError(f"parameter {p.name} has no concrete type to make inputs from")
        arrays.append(make_array(t, p.lo, p.hi, env, rng))
    return env, arrays
