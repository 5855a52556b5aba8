"""Near-valid mode: break one promise of a valid program at a time.

Each mutation aims at a bug class of shared/bug-classes.md:
* ``wrong_annotation`` (class 1): a binding annotated with a type that disagrees with the type
  TVM infers; the verifier and the build must then agree on whether that is legal.
* ``erase_param`` (class 3): a parameter annotated ``R.Tensor`` with unknown shape, unknown
  dtype, or ndim only, used directly by ops (no match_cast), so later stages see unknown types.
* ``edge_attrs``: attributes at the edge of legality, from the op's spec.
* ``wrong_ret`` (class 1, control flow): a function holding an ``R.If`` declared to return a
  type its body does not give (apache/tvm#17348: such a module compiled, and crashed the
  process at run time); well_formed and the normalizer should refuse it.
The mutation applied is recorded in ``meta["mutations"]`` so a finding says what was broken.
"""
from __future__ import annotations

from .catalogue import CATALOGUE
from .catalogue.spec import Value
from .choice import Chooser
from .model import Program, TensorTy, TupleTy

MUTATIONS = ("wrong_annotation", "erase_param", "edge_attrs", "wrong_ret")


def _wrong_annotation(prog: Program, ch: Chooser) -> bool:
    f = prog.main
    nodes = [n for n in f.nodes() if isinstance(n.ty, TensorTy) and n.ty.shape and n.op != "tuple"]
    if not nodes:
        return False
    n = ch.choice(nodes)
    shape = list(n.ty.shape)
    i = ch.integer(0, len(shape) - 1)
    d = shape[i]
    shape[i] = (d + ch.choice([1, 63])) if isinstance(d, int) else ch.choice([1, 64])
    dtype = n.ty.dtype
    if ch.boolean(0.2):
        dtype = "float16" if dtype != "float16" else "float32"
        shape = list(n.ty.shape)
    n.annot = TensorTy(shape, dtype)
    return True


def _wrong_ret(prog: Program, ch: Chooser) -> bool:
    f = prog.main   # as in #17348; a callee's would retype its callers' values too
    if f.ret_annot is not None or not any(n.op == "if" for n in f.nodes()):
        return False
    ty = f.value_types()[f.ret]
    fields = list(ty.fields) if isinstance(ty, TupleTy) else [ty]
    i = ch.integer(0, len(fields) - 1)
    t = fields[i]
    if not isinstance(t, TensorTy) or t.shape is None:
        return False
    shape, dtype = list(t.shape), t.dtype
    if shape and ch.boolean(0.8):
        j = ch.integer(0, len(shape) - 1)
        d = shape[j]
        shape[j] = (d + ch.choice([1, 63, 4702])) if isinstance(d, int) else ch.choice([1, 64])
    elif ch.boolean(0.5):
        shape = shape + [ch.choice([1, 3])]   # another rank
    else:
        dtype = "float16" if dtype != "float16" else "float32"
    fields[i] = TensorTy(shape, dtype)
    f.ret_annot = TupleTy(fields) if isinstance(ty, TupleTy) else fields[0]
    return True


def _erase_param(prog: Program, ch: Chooser) -> bool:
    f = prog.main
    used = {a for n in f.nodes() if n.op != "match_cast" for a in n.args}
    ps = [p for p in f.params if isinstance(p.ty, TensorTy) and p.ty.known() and p.name in used]
    if not ps:
        return False
    p = ch.choice(ps)
    how = ch.choice(["ndim", "no_shape", "no_dtype"])
    p.actual = p.ty
    if how == "ndim":
        p.ty = TensorTy(None, p.ty.dtype, p.ty.ndim)
    elif how == "no_shape":
        p.ty = TensorTy(None, p.ty.dtype, -1)
    else:
        p.ty = TensorTy(None, "", p.ty.ndim)
    return True


def _edge_attrs(prog: Program, ch: Chooser) -> bool:
    f = prog.main
    tys = f.value_types()
    for n in ch.sample([n for n in f.nodes() if n.op in CATALOGUE], 4):
        spec = CATALOGUE[n.op]
        ins = [Value(a, tys[a]) for a in n.args if isinstance(tys.get(a), TensorTy)]
        if any(not v.ty.known() for v in ins):
            continue   # an erased parameter: its shape is not known to the model any more
        try:
            attrs = spec.near_valid_attrs(_Ctx(ch), ins, dict(n.attrs))
        except Exception:  # noqa: BLE001 - a spec bug must not end a campaign
            attrs = None
        if attrs is not None:
            n.attrs = attrs
            return True
    return False


class _Ctx:
    """The part of the generation context that near_valid_attrs may use."""

    def __init__(self, ch: Chooser):
        self.ch = ch
        self.mode = "near-valid"


def mutate(prog: Program, ch: Chooser) -> Program:
    prog = prog.copy()
    applied = []
    for _ in range(ch.integer(1, 2)):
        for name in ch.sample(MUTATIONS, len(MUTATIONS)):
            if globals()["_" + name](prog, ch):
                applied.append(name)
                break
    prog.meta["mutations"] = applied
    return prog
