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
  value's storage, which static memory planning must keep alive while the view is;
* ``dyn_slice``: ``R.dynamic_strided_slice(x, begin, end, strides)`` of a static-shaped value
  with int64 vectors whose values the generator knows (constants, or computed in the graph
  from ``shape_tensor``), its result (``R.Tensor(ndim=n)``: the extents are data-dependent)
  matched to fresh dims holding the extents numpy's slice gives, or to those static extents.

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
    r = ch.integer(0, 13)
    if r >= 12:
        return gen_slice(ctx)
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


def slice_extent(begin: int, end: int, stride: int, dim: int) -> int:
    """The length of ``range(dim)[begin:end:stride]``: Python's (numpy's) slice, what TVM's
    shape function for ``dynamic_strided_slice`` computes (a negative index counts from the
    end, then clamps to [0, dim] for a positive stride and to [-1, dim - 1] for a negative
    one) wherever the slice is not empty."""
    return len(range(*slice(begin, end, stride).indices(dim)))


def _slice_axis(ch, dim: int) -> tuple[int, int, int]:
    """(begin, end, stride) for one axis of ``dim`` elements, the slice non-empty: indices
    past either end (clamped) and negative ones (from the end) are meant to be drawn."""
    for _ in range(12):
        stride = ch.choice([1, 1, 1, 2, 3, -1, -1, -2])
        lo, hi = -dim - 2, dim + 2
        begin, end = ch.integer(lo, hi), ch.integer(lo, hi)
        if ch.boolean(0.3):   # the whole axis, from the shape (or past it, clamped)
            if stride > 0:
                end = dim
            else:
                begin = dim
        if slice_extent(begin, end, stride, dim) >= 1:
            return begin, end, stride
    return (0, dim, 1) if ch.boolean(0.5) else (-1, -dim - 1, -1)


def _const_vec(ctx, values: list[int]) -> str:
    """An int64 vector holding ``values``: one ``const`` when they are all equal, else the
    ``concat`` of one-element constants."""
    one = TensorTy([1], "int64")
    if len(set(values)) == 1:
        ty = TensorTy([len(values)], "int64")
        return ctx.add_node("const", [], {"value": values[0], "ty": ty.to_json()}, ty).name
    parts = [ctx.add_node("const", [], {"value": v, "ty": one.to_json()}, one).name
             for v in values]
    node = ctx.add_node("relax.concat", parts, {"axis": 0}, TensorTy([len(values)], "int64"))
    ctx.add_value(node, min(values), max(values), True)
    return node.name


def _vec(ctx, values: list[int], x: Value) -> str:
    """An int64 vector holding ``values``, computed from x's shape where it is x's shape
    (``shape_tensor``) or x's shape less a constant (``relax.subtract``)."""
    dims = list(x.ty.shape)
    k = {d - v for d, v in zip(dims, values)}
    if len(k) == 1 and ctx.ch.boolean(0.7):
        t = shape_tensor(ctx, x)
        (k,) = k
        if k == 0:
            return t.name
        c = _const_vec(ctx, [k] * len(dims))
        node = ctx.add_node("relax.subtract", [t.name, c], {}, TensorTy([len(dims)], "int64"))
        ctx.add_value(node, min(values), max(values), True)
        return node.name
    return _const_vec(ctx, values)


def gen_slice(ctx) -> bool:
    """``dyn_slice`` of a static-shaped value in scope (see the module's docstring)."""
    ch = ctx.ch
    xs = [v for v in ctx.pool if v.static() and v.ty.shape and len(v.ty.shape) <= 4
          and all(d >= 1 for d in v.ty.shape)]
    if not xs:
        return False
    x = xs[-1] if ch.boolean(0.5) else ch.choice(xs)
    axes = [_slice_axis(ch, d) for d in x.ty.shape]
    b, e, s = (_vec(ctx, [a[i] for a in axes], x) for i in range(3))
    extents = [slice_extent(bi, ei, si, d) for (bi, ei, si), d in zip(axes, x.ty.shape)]
    known = {}
    shape: list = list(extents)
    if ch.boolean(0.7):   # fresh dims the run defines (else the static extents)
        for i in range(len(shape)):
            if ch.boolean(0.7):
                d = ctx.fresh("d")
                known[d] = extents[i]
                shape[i] = d
    node = ctx.add_node("dyn_slice", [x.name, b, e, s], {"known": known},
                        TensorTy(shape, x.dtype))
    ctx.add_value(node, x.lo, x.hi, x.exact)
    return True
