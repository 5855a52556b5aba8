"""What an op spec is. One ``OpSpec`` per Relax op drives three consumers:

* the generator: ``sample`` picks inputs (from the values in scope, or new parameters) and
  attributes that the op accepts, and ``infer`` gives the result type (the shape rule);
* the numpy reference: ``reference`` computes the result;
* the worker's numeric oracle: ``tol`` gives per-dtype (rtol, atol).

Specs never touch TVM. ``call`` says how the op is invoked, in plain values plus the markers
below, and ``fuzz.materialize`` turns that into TVM objects. That keeps the catalogue valid
across TVM releases whose Python API differs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import dims as D
from ..model import TensorTy, Ty

FLOATS = ("float32", "float16", "bfloat16", "float64")
SIGNED = ("int8", "int32", "int64")
INTS = SIGNED + ("uint8",)
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + ("bool",)

# Value ranges per dtype that inputs and intermediate results must stay inside. Keeping the
# generated values small keeps int overflow and fp16 overflow out of valid programs, so a
# numeric difference means a compiler bug rather than undefined behaviour.
DTYPE_LIMIT = {
    "float32": 1e30, "float64": 1e300, "float16": 6e4, "bfloat16": 1e30,
    "int8": 127, "uint8": 255, "int32": 2**31 - 1, "int64": 2**62, "bool": 1,
}
DTYPE_MIN = {"uint8": 0, "bool": 0}

# Default comparison tolerances (rtol, atol) for one op. A program's tolerance is the loosest
# one along the path to an output (see fuzz.reference.tolerance).
DEFAULT_TOL = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (1e-2, 1e-2),   # 10-bit mantissa, and LLVM may keep fp32 between ops
    "bfloat16": (3e-2, 3e-2),  # 7-bit mantissa
}


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in INTS


# --- markers returned by OpSpec.call, turned into TVM objects by fuzz.materialize ---------
@dataclass(frozen=True)
class ShapeArg:
    """A shape (list of dims, possibly symbolic) passed as a Relax shape or tuple of ints."""

    dims: tuple


@dataclass(frozen=True)
class ConstArg:
    """A scalar constant tensor (``relax.const(value, dtype)``)."""

    value: Any
    dtype: str


@dataclass(frozen=True)
class TupleArg:
    """Several tensor arguments passed as one Relax tuple (concat, stack, einsum...)."""

    items: tuple


@dataclass(frozen=True)
class PrimArg:
    """A ``R.prim_value`` argument (a scalar that is an expression, not an attribute)."""

    value: Any
    dtype: str = "int64"


# --- values in scope while generating ----------------------------------------------------
@dataclass
class Value:
    """A tensor value the generator can feed to an op, with what it knows about its contents."""

    name: str
    ty: TensorTy
    lo: float = -math.inf
    hi: float = math.inf
    exact: bool = False  # contents are exactly what numpy computes (no rounding upstream)

    @property
    def dtype(self) -> str:
        return self.ty.dtype

    @property
    def shape(self) -> list:
        return self.ty.shape

    @property
    def rank(self) -> int:
        return self.ty.ndim

    def static(self) -> bool:
        return self.ty.shape is not None and all(D.is_static(d) for d in self.ty.shape)

    def numel_static(self) -> Optional[int]:
        return math.prod(self.ty.shape) if self.static() else None


def within(dtype: str, lo: float, hi: float) -> bool:
    lim = DTYPE_LIMIT[dtype]
    try:
        lo, hi = float(lo), float(hi)
    except OverflowError:   # an integer bound beyond any float: certainly out of range
        return False
    return (not math.isnan(lo) and not math.isnan(hi)
            and -lim <= lo and hi <= lim and lo >= DTYPE_MIN.get(dtype, -lim))


@dataclass
class OpSpec:
    """Base class: subclass per op family; most ops are instances of a family class."""

    name: str                                   # the Relax op, e.g. "relax.nn.conv2d"
    family: str = ""
    dtypes: Sequence[str] = FLOATS
    tol: dict = field(default_factory=lambda: dict(DEFAULT_TOL))
    weight: float = 1.0                         # relative frequency in generated programs
    discontinuous: bool = False                 # result jumps on tiny input changes
    builder: str = ""                           # path under tvm.relax.op; default from name
    uses_env: bool = False                      # reference needs symbolic dim values (env=)

    def __post_init__(self):
        if not self.builder:
            self.builder = self.name[len("relax."):]

    # generation --------------------------------------------------------------------------
    def sample(self, ctx) -> Optional[tuple[list[Value], dict]]:
        """Pick inputs and attributes, or None when this op cannot be used now."""
        raise NotImplementedError

    def infer(self, tys: list[TensorTy], attrs: dict) -> Ty:
        """The shape/dtype rule: the type TVM must infer for the result."""
        raise NotImplementedError

    def interval(self, ins: list[Value], attrs: dict, out: Ty) -> tuple[float, float]:
        """Bounds on the result's values; unknown by default."""
        return (-math.inf, math.inf)

    def exact(self, ins: list[Value], attrs: dict, out: Ty) -> bool:
        """Whether the result is exactly reproducible: integer results of exact inputs."""
        return (all(v.exact for v in ins) and isinstance(out, TensorTy)
                and not is_float(out.dtype))

    # numpy reference ---------------------------------------------------------------------
    def reference(self, xs: list[np.ndarray], attrs: dict):
        """The result in numpy, in the dtype ``infer`` gives. With ``uses_env`` it is called
        with ``env=`` (symbolic dim name -> int) as well."""
        raise NotImplementedError

    # materialization ---------------------------------------------------------------------
    def call(self, args: list, attrs: dict) -> tuple[list, dict]:
        """Positional and keyword arguments of the ``tvm.relax.op`` builder."""
        return list(args), dict(attrs)

    def near_valid_attrs(self, ctx, ins: list[Value], attrs: dict) -> Optional[dict]:
        """Attributes at the edge of legality (near-valid mode); None when the op has none."""
        return None


# --- helpers shared by the family modules ------------------------------------------------
def f64(x: np.ndarray) -> np.ndarray:
    """Upcast floats for the reference: each op is computed exactly, then rounded once."""
    return x.astype(np.float64) if x.dtype.kind == "f" or "bfloat16" in str(x.dtype) else x


def np_dtype(dtype: str):
    if dtype == "bfloat16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return np.dtype(dtype)


def cast(x, dtype: str) -> np.ndarray:
    return np.asarray(x).astype(np_dtype(dtype))


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def monotone(fn: Callable[[float], float]):
    """Interval rule for an increasing function."""

    def rule(lo, hi):
        with np.errstate(all="ignore"):
            return float(fn(lo)), float(fn(hi))

    return rule


def broadcast_dims(a: list, b: list) -> Optional[list]:
    """Numpy broadcasting over model dims; None when not provably compatible."""
    out = []
    for i in range(max(len(a), len(b))):
        da = a[len(a) - 1 - i] if i < len(a) else 1
        db = b[len(b) - 1 - i] if i < len(b) else 1
        if D.same(da, db) or db == 1:
            out.append(da)
        elif da == 1:
            out.append(db)
        else:
            return None
    return out[::-1]
