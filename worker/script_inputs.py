"""Inputs for a Relax function from its parameters' types alone: for a user's TVMScript,
where no program model says what the inputs are.

``entry_function`` chooses the function a module is run through (``main``, else the one public
Relax function, else the one the user names). Every parameter a Relax function may have gets a
value: a tensor with static dims, symbolic
dims or dim expressions (``n + 2``, ``n * 4``: the free variables bound to small values, then
the expression evaluated); a tensor of unknown shape or only an ndim (the shape a
``match_cast`` of it in the body gives, else one of that ndim); an ``R.Shape``; an ``R.Prim``;
a tuple of these (``output_arrays`` reads any result back as arrays). A parameter nothing can
be made for (an ``R.Object``, a callable) raises
``NoInputs`` with a one-line reason.

The functions in REPRO_CODE are written into every repro.py as they are (reducer/repro.py), so
the reproducer makes exactly the worker's inputs: they use only numpy, TVM, their arguments
and each other, and work on 0.25 to 0.27 (attribute names are probed, not assumed).
"""
from __future__ import annotations


class NoInputs(Exception):
    """No input can be made for a parameter; the message says why, in one line."""


class NoEntry(Exception):
    """The module has no function to judge it through (``entry_function``); the message says
    why and lists the public Relax functions, in one line."""


def entry_function(mod, entry=None):
    """The name of the Relax function a module is run through: ``entry`` when given (any Relax
    function of ``mod``: the VM calls private ones by name too), else ``main``, else the
    module's only public Relax function (one with a ``global_symbol``). Raises ``NoEntry``
    otherwise, listing the functions to choose from."""
    import tvm

    def name_of(gv):
        return getattr(gv, "name_hint", None) or getattr(gv, "name", "")

    funcs = {name_of(gv): f for gv, f in mod.functions.items()
             if isinstance(f, tvm.relax.Function)}
    pub = sorted(n for n, f in funcs.items()
                 if f.attrs is not None and "global_symbol" in f.attrs)
    private = sorted(set(funcs) - set(pub))
    listed = (", ".join(pub) or "none") + ("; private: " + ", ".join(private) if private else "")
    if entry:
        if entry not in funcs:
            raise NoEntry(f"the module has no Relax function {entry}; its public Relax "
                          f"functions: {listed}")
        return entry
    if "main" in funcs:
        return "main"
    if len(pub) == 1:
        return pub[0]
    raise NoEntry(f"the module has no main and {len(pub)} public Relax functions ({listed}): "
                  "choose one with --entry NAME")


class ShapeValue(tuple):
    """The value of an ``R.Shape`` parameter (a tuple of ints; a plain tuple is a Relax
    tuple)."""


def input_values(func, seed=0, by_name=None):
    """One value per parameter of the Relax function ``func``: numpy arrays, tuples of ints
    (``ShapeValue``: an ``R.Shape``), Python numbers (an ``R.Prim``) and tuples of those;
    deterministic from ``seed``. ``by_name``: ``{param: [shape, dtype, lo, hi]}`` for
    parameters whose type does not say."""
    import numpy as np
    import tvm

    rng = np.random.default_rng(seed)
    sym = getattr(tvm, "sym", None) or getattr(tvm, "arith")
    analyzer = sym.Analyzer()
    bound = {}   # symbolic variable name -> value

    def ty_of(x):
        ty = getattr(x, "ty", None)
        return ty if ty is not None else x.struct_info

    def name_of(x):
        return getattr(x, "name", None) or getattr(x, "name_hint", "")

    def kind_of(ty):
        if hasattr(ty, "fields"):
            return "tuple"
        if hasattr(ty, "values") and hasattr(ty, "ndim"):
            return "shape"
        if hasattr(ty, "shape") and hasattr(ty, "ndim"):
            return "tensor"
        if hasattr(ty, "dtype") and not hasattr(ty, "ndim"):
            return "prim"
        return type(ty).__name__

    def variables(expr):
        if type(expr).__name__ in ("Var", "SizeVar"):
            return [expr]
        out = []
        for field in ("a", "b", "value"):
            sub = getattr(expr, field, None)
            if sub is not None and hasattr(sub, "same_as"):
                out += variables(sub)
        return out

    def dim(expr):
        """The value of a dim: an int, or an expression over variables bound on first use."""
        if isinstance(expr, int):
            return expr
        if type(expr).__name__ == "IntImm":
            return int(expr.value)
        for var in variables(expr):
            name = name_of(var)
            if name not in bound:
                bound[name] = int(rng.integers(1, 5))
                analyzer.bind(var, bound[name])
        value = analyzer.simplify(expr)
        if type(value).__name__ != "IntImm":
            raise NoInputs(f"dim {expr} does not evaluate to a number")
        if int(value.value) < 0:
            raise NoInputs(f"dim {expr} is negative ({int(value.value)}) for "
                           + ", ".join(f"{k}={v}" for k, v in bound.items()))
        return int(value.value)

    # The shape a match_cast in the body gives a parameter whose own type hides it.
    cast = {}
    for block in getattr(func.body, "blocks", []):
        for b in block.bindings:
            if type(b).__name__ == "MatchCast":
                for p in func.params:
                    if b.value.same_as(p) and name_of(p) not in cast:
                        cast[name_of(p)] = ty_of(b)

    def np_dtype(dtype):
        try:
            return np.dtype(dtype)
        except TypeError:
            import ml_dtypes   # bfloat16, float8 kinds

            return np.dtype(getattr(ml_dtypes, dtype))

    def array(shape, dtype, lo=-2.0, hi=2.0):
        shape = tuple(shape)
        if dtype == "bool":
            return rng.integers(0, 2, size=shape).astype(bool)
        if dtype.startswith("uint"):
            lo = max(lo, 0)
        if dtype.startswith(("int", "uint")):
            return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(dtype)
        return rng.uniform(lo, hi, size=shape).astype(np_dtype(dtype))

    def value(ty, what, hidden=None):
        kind = kind_of(ty)
        if kind == "tensor":
            dtype = str(ty.dtype) if ty.dtype is not None and str(ty.dtype) else "float32"
            if ty.shape is None and hidden is not None and kind_of(hidden) == "tensor" \
                    and hidden.shape is not None:
                ty, dtype = hidden, (str(hidden.dtype) or dtype)
            if ty.shape is not None and hasattr(ty.shape, "values"):
                shape = [dim(d) for d in ty.shape.values]
            elif ty.shape is not None:
                raise NoInputs(f"{what}: its shape {ty.shape} is a value, not dims")
            else:   # only an ndim (or not even that: then one dim)
                shape = [int(rng.integers(1, 5)) for _ in range(ty.ndim if ty.ndim >= 0 else 1)]
            return array(shape, "float32" if dtype in ("void", "") else dtype)
        if kind == "shape":
            if ty.values is None and hidden is not None and kind_of(hidden) == "shape" \
                    and hidden.values is not None:
                ty = hidden   # R.Shape(ndim=2) cast to R.Shape([n, m]): n, m bound once
            if ty.values is not None:
                return ShapeValue(dim(d) for d in ty.values)
            return ShapeValue(int(rng.integers(1, 5))
                              for _ in range(ty.ndim if ty.ndim >= 0 else 1))
        if kind == "prim":
            dtype = str(ty.dtype)
            if dtype == "bool":
                return bool(rng.integers(0, 2))
            if dtype.startswith(("int", "uint")):
                return int(rng.integers(1, 5))
            return float(rng.uniform(-2, 2))
        if kind == "tuple":
            return tuple(value(f, f"{what} field {i}") for i, f in enumerate(ty.fields))
        raise NoInputs(f"{what} has type {ty}: no input can be made for it")

    out = []
    for p in func.params:
        name = name_of(p)
        if by_name and name in by_name:
            shape, dtype, lo, hi = by_name[name]
            out.append(array(shape, dtype, lo, hi))
            continue
        out.append(value(ty_of(p), f"parameter {name}", cast.get(name)))
    return out


def vm_arguments(values, tensor):
    """``input_values`` as VM arguments: arrays through ``tensor`` (numpy -> device tensor),
    shapes as ShapeTuple, numbers as they are, tuples field by field."""
    import numpy as np
    import tvm

    def arg(v):
        if isinstance(v, np.ndarray):
            return tensor(v)
        if isinstance(v, ShapeValue):
            return tvm.runtime.ShapeTuple(list(v))
        if isinstance(v, tuple):
            return tuple(arg(x) for x in v)
        return v

    return [arg(v) for v in values]


def output_arrays(x):
    """A VM result as a flat list of numpy arrays, whatever the entry function returns:
    tensors, tuples (nested), shapes, prim values, Python numbers and strings (None: an empty
    array); an opaque object (a closure) as its type's name, all of it that compares."""
    import numpy as np
    import tvm

    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return [np.asarray(x if x is not None else [])]
    if isinstance(x, tvm.runtime.ShapeTuple):
        return [np.asarray(list(x), dtype="int64")]
    if isinstance(x, (list, tuple)) or type(x).__name__ == "Array":
        return [y for i in x for y in output_arrays(i)]
    if hasattr(x, "numpy"):
        return [x.numpy()]
    if isinstance(getattr(x, "value", None), (bool, int, float, str)):
        return [np.asarray(x.value)]   # a boxed number or string
    # An opaque object (a closure, a storage): only its kind can be compared.
    return [np.asarray(f"<{type(x).__name__}>")]


REPRO_CODE = (NoInputs, NoEntry, entry_function, ShapeValue, input_values, vm_arguments,
              output_arrays)
