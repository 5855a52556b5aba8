"""Data-dependent shapes for the Relax generator: ``shape_of``, ``shape_to_tensor``,
``tensor_to_shape`` and ``match_cast`` to fresh symbolic dims; and ``R.call_dps_packed`` to a
function the TVM runtime registers (``dps_copy``: ``runtime.TVMTensorCopyFromTo``).

* ``shape_tensor`` (``R.shape_to_tensor(R.shape_of(x))``): a value's shape as an int64
  tensor, exactly known (its dims), usable by any integer op;
* ``reshape_dyn``: a value reshaped to a shape read from such a tensor at run time
  (``R.tensor_to_shape``), matched to fresh symbolic dims (``R.match_cast`` to
  ``R.Shape([d1, d2])``), so every later type carries dims only the run defines;
* a ``match_cast`` of a computed value of static shape to a type whose dims are fresh
  symbolic dims, or (a third of them) to its own static type: a view that aliases the
  value's storage, which static memory planning must keep alive while the view is.

The generator knows what each fresh dim will hold (the static dims it came from): it is
recorded on the node (``known``), so inputs made for a later parameter that took such a dim
(``fuzz.inputs.bind_dims``) agree with it, and the reference checks it at run time.
"""
from __future__ import annotations

import math

from .catalogue.spec import Value
from .model import TensorTy

MAX_FRESH = 8   # fresh dims stand for static dims no larger (the generator's bound for a
#                 symbolic dim when it limits tensor sizes)


def _small_static(v: Value) -> bool:
    return (v.ty.shape is not None and 1 <= len(v.ty.shape) <= 3 and v.static()
            and all(1 <= d <= MAX_FRESH for d in v.ty.shape))


def shape_tensor(ctx, v: Value) -> Value:
    dims = v.ty.shape
    lo = min([d for d in dims if isinstance(d, int)] + ([1] if any(
        not isinstance(d, int) for d in dims) else []))
    hi = max([d for d in dims if isinstance(d, int)] + ([MAX_FRESH] if any(
        not isinstance(d, int) for d in dims) else []))
    node = ctx.add_node("shape_tensor", [v.name], {}, TensorTy([len(dims)], "int64"))
    return ctx.add_value(node, lo, hi, True)


def gen_dyn(ctx) -> bool:
    """Add one data-dependent-shape construct to ``ctx``; False when none applies."""
    ch = ctx.ch
    small = [v for v in ctx.pool if _small_static(v)]
    shaped = [v for v in ctx.pool if v.ty.shape is not None and len(v.ty.shape) >= 1]
    r = ch.integer(0, 11)
    if r >= 10:   # R.call_dps_packed to a function the runtime registers
        known = [v for v in ctx.pool if v.ty.known()]
        if not known:
            return False
        v = known[-1] if ch.boolean(0.5) else ch.choice(known)
        node = ctx.add_node("dps_copy", [v.name], {}, v.ty)
        ctx.add_value(node, v.lo, v.hi, v.exact)
        return True
    if r < 3 and shaped:
        shape_tensor(ctx, shaped[-1] if ch.boolean(0.5) else ch.choice(shaped))
        return True
    if not small:
        return False
    y = small[-1] if ch.boolean(0.5) else ch.choice(small)
    if r < 7:
        numel = math.prod(y.ty.shape)
        xs = [v for v in ctx.pool if v.static() and v.ty.shape is not None
              and math.prod(v.ty.shape) == numel]
        x = ch.choice(xs) if xs and ch.boolean(0.5) else y
        t = shape_tensor(ctx, y)
        dims = [ctx.fresh("d") for _ in y.ty.shape]
        node = ctx.add_node("reshape_dyn", [x.name, t.name],
                            {"dims": dims, "known": dict(zip(dims, y.ty.shape))},
                            TensorTy(dims, x.dtype))
        ctx.add_value(node, x.lo, x.hi, x.exact)
        return True
    shape = list(y.ty.shape)
    # A third keep every dim: a view of the same type (memory planning must see the alias)
    which = [] if ch.boolean(0.3) else (
        [i for i in range(len(shape)) if ch.boolean(0.6)] or [len(shape) - 1])
    known = {}
    for i in which:
        d = ctx.fresh("d")
        known[d] = shape[i]
        shape[i] = d
    target = TensorTy(shape, y.dtype)
    node = ctx.add_node("match_cast", [y.name], {"ty": target.to_json(), "known": known}, target)
    ctx.add_value(node, y.lo, y.hi, y.exact)
    return True
