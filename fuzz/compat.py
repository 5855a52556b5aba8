"""The API differences between the TVM releases tvmfuzz runs on (0.25, 0.26, 0.27), in one place.

Each helper detects the installed TVM's spelling by feature (does the class or attribute
exist?), never by version string, so a release in between or a nightly works when it spells
things one of the known ways. ``fuzz.materialize`` (the TVM seam) and the worker code that
builds and runs cases go through here; everything else works on the program model.

Known differences (0.25 / 0.26 and 0.27):

* tensor and tuple types of vars: ``relax.TensorStructInfo``/``TupleStructInfo`` (0.25, where
  ``relax.TensorType`` is another, type-level class) / ``relax.TensorType``/``TupleType``;
* a var's type: ``var.struct_info`` / ``var.ty``; a var's name: ``var.name_hint`` / ``.name``;
* ``R.call_tir``'s output type: ``out_sinfo=`` / ``out_ty=``;
* a scalar argument: ``relax.PrimValue(x)`` / ``relax.prim_value(x)``;
* integer-set analysis: ``tvm.arith`` (0.25, 0.26) / ``tvm.sym`` (0.27);
* TIR buffers' ``axis_separators``: 0.25 only;
* runtime tensors: ``tvm.runtime.tensor`` in all three (``tvm.nd.array`` before).

Not covered (0.27 only): the reducer's IR-level passes (``reducer/passes/ir/``,
``reducer/script_passes.py``) and the standalone ``repro.py`` use 0.27's spelling directly.
"""
from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def _relax():
    from tvm import relax

    return relax


def struct_info_api() -> bool:
    """True on releases that name Relax types ``*StructInfo`` (0.25)."""
    return hasattr(_relax(), "TensorStructInfo")


def tensor_type(shape, dtype, ndim: int = -1):
    """The Relax tensor type (0.25: struct info) for ``shape`` (a list of PrimExprs, or None),
    ``dtype`` (None or "" when unknown) and ``ndim`` (-1 when unknown)."""
    relax = _relax()
    if struct_info_api():
        return relax.TensorStructInfo(shape, dtype or "", ndim=ndim if shape is None else -1)
    if shape is None:
        return relax.TensorType(None, dtype or None, ndim=ndim)
    return relax.TensorType(shape, dtype or None)


def tuple_type(fields: list):
    relax = _relax()
    return (relax.TupleStructInfo if struct_info_api() else relax.TupleType)(fields)


def tensor_type_class():
    relax = _relax()
    return relax.TensorStructInfo if struct_info_api() else relax.TensorType


def tuple_type_class():
    relax = _relax()
    return relax.TupleStructInfo if struct_info_api() else relax.TupleType


def is_tensor_type(t) -> bool:
    return isinstance(t, tensor_type_class())


def is_tuple_type(t) -> bool:
    return isinstance(t, tuple_type_class())


def type_of(expr):
    """The Relax type (0.25: struct info) of a var or an expression."""
    ty = getattr(expr, "ty", None)
    return ty if ty is not None else expr.struct_info


def ret_type(func):
    """A Relax function's declared return type: ``.ret_ty`` (0.26, 0.27), ``.ret_struct_info``
    (0.25)."""
    ty = getattr(func, "ret_ty", None)
    return ty if ty is not None else func.ret_struct_info


def var_name(var) -> str:
    """A Relax var's name: ``.name`` (0.26, 0.27), ``.name_hint`` (0.25)."""
    name = getattr(var, "name", None)
    return name if isinstance(name, str) else var.name_hint


def prim_value(x):
    """A Relax scalar value (``R.prim_value``) from an int, a float or a PrimExpr."""
    relax = _relax()
    make = getattr(relax, "prim_value", None)
    return make(x) if make is not None else relax.PrimValue(x)


def call_tir_out_kw() -> str:
    """The name of ``relax.op.call_tir``'s output-type argument."""
    import inspect

    params = inspect.signature(_relax().op.call_tir).parameters
    return "out_ty" if "out_ty" in params else "out_sinfo"


def call_tir(gvar, args, out, **kw):
    """``relax.op.call_tir`` with the output type passed under this release's keyword."""
    return _relax().op.call_tir(gvar, args, **{call_tir_out_kw(): out}, **kw)


def sym():
    """The integer-set analysis module: ``tvm.sym`` (0.27), ``tvm.arith`` before."""
    import importlib

    try:
        return importlib.import_module("tvm.sym")
    except ImportError:
        return importlib.import_module("tvm.arith")


@functools.lru_cache(maxsize=None)
def has_axis_separators() -> bool:
    """Whether TIR buffers take ``axis_separators`` (0.25; gone in 0.26): the one probe, asked
    of TVMScript's ``match_buffer`` (its module is ``tvm.script.tirx`` on every release)."""
    import inspect

    from tvm.script import tirx as T

    return "axis_separators" in inspect.signature(T.match_buffer).parameters


def release_features() -> dict:
    """What the generator may use on the TVM release imported here (detected by feature)."""
    return {"axis_separators": has_axis_separators()}


def tensor(array, device=None):
    """A TVM runtime tensor holding ``array`` (on ``device``, default the CPU)."""
    import tvm

    dev = device if device is not None else tvm.cpu()
    make = getattr(tvm.runtime, "tensor", None)
    if make is not None:
        return make(array, dev)
    return tvm.nd.array(array, dev)   # releases before the Tensor rename


def tensor_class():
    import tvm

    return getattr(tvm.runtime, "Tensor", None) or tvm.nd.NDArray


def shape_type(values: list):
    """``R.Shape([...])``'s type: 0.25's ShapeStructInfo, 0.27's ShapeType."""
    relax = _relax()
    return (relax.ShapeStructInfo if struct_info_api() else relax.ShapeType)(values)
