"""A Relax program model as the Python source of a ``torch.nn.Module``: one table, ``WRITERS``,
op name -> how the op is written with torch's functions, for the catalogue ops torch has with
the catalogue's (numpy's) semantics. Neither TVM nor torch is imported here: the source is text,
made from the model alone, so it is what a case's judge runs, what repro.py embeds and what is
hashed, and it is made anywhere a case travels. The ``torch`` case kind
(``worker/torch_judge.py``) executes it in the sandbox child.

The module is::

    import torch

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.p2 = torch.nn.Parameter(torch.tensor([...], dtype=torch.float32)
                                         .reshape([4, 4]), requires_grad=False)

        def forward(self, p1):
            v3 = torch.matmul(p1, self.p2)
            ...
            return (v5,)

    DYNAMIC = {"p1": {0: "n"}}   # the dims torch.export is told are dynamic, by input

A case is written with a few options (``TorchOptions``): parameters after the first as
``nn.Parameter`` weights of the module (``weights``, their values the case's inputs), the
inputs' dims declared dynamic to ``torch.export`` (``dynamic``: every symbolic dim of the
program always; with the option, the first input's static dims too), ``torch.export``'s
``run_decompositions()`` before the import (``decompose``) and ``from_exported_program``'s own
flags (``keep_params_as_input``, ``unwrap_unit_return_tuple``, ``no_bind_return_tuple``,
``run_ep_decomposition``). A case with an op that has no entry, or an entry that refuses the
op's dtype or attributes, is not exportable (``NotExportable``).

Shapes that depend on symbolic dims (reshape's target, full's shape) are computed from the
input that carries the dim (``p1.shape[0] * 4``), as torch code computes them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from . import dims as D
from .model import FrontendOptions, Function, Node, Program, TensorTy, TupleTy


class NotExportable(Exception):
    """The case has something torch cannot say the way the catalogue means it."""


@dataclass
class TorchOptions(FrontendOptions):
    """How one case is written, exported and imported; travels in the case
    (``meta["torch"]``)."""

    weights: bool = False               # parameters after the first: nn.Parameter weights
    dynamic: bool = False               # the first input's static dims dynamic too
    decompose: bool = False             # ep.run_decompositions() before the import
    keep_params_as_input: bool = False  # from_exported_program flags
    unwrap_unit_return_tuple: bool = False
    no_bind_return_tuple: bool = False
    run_ep_decomposition: bool = True


DTYPES = {"float32": "torch.float32", "float16": "torch.float16",
          "bfloat16": "torch.bfloat16", "float64": "torch.float64", "int8": "torch.int8",
          "int32": "torch.int32", "int64": "torch.int64", "uint8": "torch.uint8",
          "bool": "torch.bool"}
FL = ("float32", "float16", "float64", "bfloat16")
INT = ("int8", "int32", "int64", "uint8")


def torch_dtype(dtype: str) -> str:
    if dtype not in DTYPES:
        raise NotExportable(f"dtype {dtype!r}")
    return DTYPES[dtype]


# --- the source being written -------------------------------------------------------------
class Writer:
    """Lines of ``forward`` and the expressions of the dims it needs."""

    def __init__(self, dim_sources: dict):
        self.lines: list = []
        self.dim_sources = dim_sources   # symbolic var -> (input name, axis)
        self.n = 0

    def fresh(self) -> str:
        self.n += 1
        return f"_t{self.n}"

    def let(self, expr: str) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = {expr}")
        return name

    def dim(self, d) -> str:
        """A Python int expression of dim ``d`` at run time."""
        if D.is_static(d):
            return str(int(d))
        return self._expr(D.parse(d))

    def _expr(self, e) -> str:
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return str(e.value)
        if isinstance(e, ast.Name):
            if e.id not in self.dim_sources:
                raise NotExportable(f"symbolic dim {e.id} has no input that carries it")
            src, axis = self.dim_sources[e.id]
            return f"{src}.shape[{axis}]"
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
            return f"(-{self._expr(e.operand)})"
        if not isinstance(e, ast.BinOp):
            raise NotExportable(f"dim expression {ast.dump(e)}")
        op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//"}.get(type(e.op))
        if op is None:
            raise NotExportable(f"dim expression {ast.dump(e)}")
        return f"({self._expr(e.left)} {op} {self._expr(e.right)})"

    def shape(self, dims) -> str:
        return "[" + ", ".join(self.dim(d) for d in dims) + "]"


# --- the table ----------------------------------------------------------------------------
@dataclass
class TorchOp:
    """How one catalogue op is written: ``write(w, node, ins, tys) -> expression or list of
    expressions`` (a tuple result); ``dtypes``: the input dtypes torch's CPU kernels take."""

    write: Callable
    dtypes: Optional[tuple] = None

    def __call__(self, w: Writer, n: Node, ins: list, tys: list):
        for t in tys:
            if isinstance(t, TensorTy) and self.dtypes is not None and t.dtype not in self.dtypes:
                raise NotExportable(f"{n.op} on {t.dtype}")
        return self.write(w, n, ins, tys)


def _fn(name: str, dtypes=None, **fixed):
    """``name(*ins, **fixed)``."""
    extra = "".join(f", {k}={v!r}" for k, v in fixed.items())
    return TorchOp(lambda w, n, ins, tys: f"{name}({', '.join(ins)}{extra})", dtypes)


def _attr_fn(name: str, dtypes=None, **attrs):
    """``name(x, torch_kw=node.attrs[catalogue_name])``."""
    def write(w, n, ins, tys):
        kw = "".join(f", {k}={n.attrs[v]!r}" for k, v in attrs.items())
        return f"{name}({', '.join(ins)}{kw})"
    return TorchOp(write, dtypes)


def _axes(n: Node, rank: int):
    ax = n.attrs.get("axis")
    if ax is None:
        return None
    return [a % max(rank, 1) for a in ([ax] if isinstance(ax, int) else list(ax))]


def _reduced_axes(n: Node, rank: int) -> list:
    """The axes a reduction node reduces (all of them for ``axis=None``); an empty list has
    no torch form (Relax reduces nothing, torch everything)."""
    axes = _axes(n, rank)
    if axes == []:
        raise NotExportable("empty axes")
    return list(range(rank)) if axes is None else axes


def _reduce(name: str, dtypes=None):
    def write(w, n, ins, tys):
        rank = tys[0].ndim
        axes = _reduced_axes(n, rank)
        keep = bool(n.attrs.get("keepdims"))
        if rank == 0:
            return ins[0]
        return f"{name}({ins[0]}, dim={axes}, keepdim={keep})"
    return TorchOp(write, dtypes)


def _prod(w, n, ins, tys):
    rank = tys[0].ndim
    axes = _reduced_axes(n, rank)
    keep = bool(n.attrs.get("keepdims"))
    x = ins[0]
    for a in sorted(axes, reverse=True):   # torch.prod takes one dim at a time
        x = f"torch.prod({x}, dim={a}, keepdim={keep})"
    return x


def _moments(name):
    def write(w, n, ins, tys):
        rank = tys[0].ndim
        axes = _reduced_axes(n, rank)
        if rank == 0:
            raise NotExportable(f"{name} of a scalar")
        return (f"torch.{name}({ins[0]}, dim={axes}, correction=0, "
                f"keepdim={bool(n.attrs.get('keepdims'))})")
    return TorchOp(write, FL)


def _arg(name):
    def write(w, n, ins, tys):
        ax, keep = n.attrs.get("axis"), bool(n.attrs.get("keepdims"))
        if ax is None:
            out = f"torch.{name}({ins[0]})"
            if keep:
                out = f"{out}.reshape({[1] * tys[0].ndim})"
            return out
        return f"torch.{name}({ins[0]}, dim={ax}, keepdim={keep})"
    return TorchOp(write)


def _scan(name):
    def write(w, n, ins, tys):
        x, ax = ins[0], n.attrs.get("axis")
        dt = n.attrs.get("dtype") or tys[0].dtype
        if ax is None:
            x, ax = f"torch.flatten({x})", 0
        x = f"{x}.to({torch_dtype(dt)})"
        out = f"torch.{name}({x}, dim={ax})"
        if n.attrs.get("exclusive"):
            if name != "cumsum":
                raise NotExportable("exclusive cumprod")
            out = f"({out} - {x})"
        return out
    return TorchOp(write)


def _clip(w, n, ins, tys):
    return f"torch.clamp({ins[0]}, min={n.attrs['min']!r}, max={n.attrs['max']!r})"


def _softplus(w, n, ins, tys):
    return (f"torch.nn.functional.softplus({ins[0]}, beta={float(n.attrs.get('beta', 1.0))!r}, "
            f"threshold={float(n.attrs.get('threshold', 20.0))!r})")


# Shapes -----------------------------------------------------------------------------------
def _reshape(w, n, ins, tys):
    # A 0 in Relax's target copies the input's dim there; torch has no such 0.
    src = tys[0].shape or []
    target = [src[i] if D.is_static(d) and d == 0 and i < len(src) else d
              for i, d in enumerate(n.attrs["shape"])]
    return f"torch.reshape({ins[0]}, {w.shape(target)})"


def _squeeze(w, n, ins, tys):
    ax = n.attrs.get("axis")
    if ax is None:
        return f"torch.squeeze({ins[0]})"
    if not list(ax):
        return ins[0]
    return f"torch.squeeze({ins[0]}, dim={tuple(a % tys[0].ndim for a in ax)})"


def _unsqueeze(w, n, ins, tys):
    x = ins[0]
    rank = tys[0].ndim + len(list(n.attrs["axis"]))
    for a in sorted(a % rank for a in n.attrs["axis"]):
        x = f"torch.unsqueeze({x}, {a})"
    return x


def _permute(w, n, ins, tys):
    axes, rank = n.attrs.get("axes"), tys[0].ndim
    if rank == 0:
        return ins[0]
    axes = list(range(rank))[::-1] if axes is None else [a % rank for a in axes]
    return f"torch.permute({ins[0]}, {axes})"


def _concat(w, n, ins, tys):
    ax = n.attrs.get("axis")
    if ax is None:   # Relax (numpy): the inputs flattened first
        return "torch.cat([" + ", ".join(f"torch.flatten({x})" for x in ins) + "], dim=0)"
    return f"torch.cat([{', '.join(ins)}], dim={ax})"


def _split(w, n, ins, tys):
    t, ax, ios = tys[0], n.attrs["axis"], n.attrs["indices_or_sections"]
    dim = t.shape[ax]
    if not D.is_static(dim):
        raise NotExportable("split of a symbolic dim")
    if isinstance(ios, int):
        if dim % ios:
            raise NotExportable("uneven sections")
        count, arg = ios, ios
    else:
        count, arg = len(list(ios)) + 1, [int(i) for i in ios]
    parts = w.let(f"torch.tensor_split({ins[0]}, {arg!r}, dim={ax})")
    return [f"{parts}[{i}]" for i in range(count)]


def _tile(w, n, ins, tys):
    return f"torch.tile({ins[0]}, {tuple(int(r) for r in n.attrs['repeats'])!r})"


def _repeat(w, n, ins, tys):
    ax = n.attrs.get("axis")
    x = ins[0] if ax is not None else f"torch.flatten({ins[0]})"
    return f"torch.repeat_interleave({x}, {int(n.attrs['repeats'])}, dim={0 if ax is None else ax})"


def _pad(w, n, ins, tys):
    pw, mode = list(n.attrs["pad_width"]), n.attrs["pad_mode"]
    if mode != "constant":
        # torch pads reflect/replicate/circular only on the trailing 1-3 dims of a batch
        raise NotExportable(f"pad mode {mode}")
    pairs = [pw[i:i + 2] for i in range(0, len(pw), 2)]
    flat = [int(v) for pair in reversed(pairs) for v in pair]
    return (f"torch.nn.functional.pad({ins[0]}, {flat}, mode='constant', "
            f"value={n.attrs.get('pad_value', 0)!r})")


def _cast(w, n, ins, tys):
    return f"{ins[0]}.to({torch_dtype(n.attrs['dtype'])})"


def _broadcast(w, n, ins, tys):
    return f"torch.broadcast_to({ins[0]}, {w.shape(n.attrs['shape'])})"


# Indexing ---------------------------------------------------------------------------------
def _slice(w, n, ins, tys):
    a, rank = n.attrs, tys[0].ndim
    strides = a.get("strides") or [1] * len(a["axes"])
    index = ["slice(None)"] * rank
    for ax, b, e, s in zip(a["axes"], a["begin"], a["end"], strides):
        if not D.is_static(s) or int(s) <= 0:
            raise NotExportable("torch slices step forward only")
        index[ax % rank] = f"slice({w.dim(b)}, {w.dim(e)}, {int(s)})"
    return f"{ins[0]}[({', '.join(index)},)]"


def _take(w, n, ins, tys):
    ax = (n.attrs.get("axis") or 0) % max(tys[0].ndim, 1)
    if tys[1].dtype not in ("int32", "int64"):
        raise NotExportable("torch indices are int32 or int64")
    idx = f"{ins[1]}.long()"
    mode = n.attrs.get("mode", "fast")
    size = w.dim(tys[0].shape[ax])
    if mode == "clip":
        idx = f"torch.clamp({idx}, 0, {size} - 1)"
    elif mode == "wrap":
        idx = f"torch.remainder({idx}, {size})"
    return f"{ins[0]}[({', '.join(['slice(None)'] * ax + [idx])},)]"


def _gather_elements(w, n, ins, tys):
    if tys[1].dtype not in ("int32", "int64"):
        raise NotExportable("torch indices are int32 or int64")
    return f"torch.gather({ins[0]}, {n.attrs['axis']}, {ins[1]}.long())"


def _where(w, n, ins, tys):
    return f"torch.where({', '.join(ins)})"


def _tri(name):
    return TorchOp(lambda w, n, ins, tys: f"torch.{name}({ins[0]}, {int(n.attrs.get('k', 0))})")


# nn ---------------------------------------------------------------------------------------
_SPATIAL = {1: "W", 2: "HW", 3: "DHW"}


def _to_canonical(w: Writer, x: str, layout: str, canon: str) -> str:
    if layout == canon:
        return x
    if sorted(layout) != sorted(canon):
        raise NotExportable(f"layout {layout}")
    return f"torch.permute({x}, {[layout.index(c) for c in canon]})"


def _from_canonical(x: str, layout: str, canon: str) -> str:
    if layout == canon:
        return x
    return f"torch.permute({x}, {[canon.index(c) for c in layout]})"


def _pads(pad: list, rank: int) -> list:
    """Relax's padding (one, per dim, or begin..end) as begin..end."""
    pads = pad if len(pad) == 2 * rank else (pad * 2 if len(pad) == rank else pad * 2 * rank)
    return [int(p) for p in pads]


def _padded(x: str, pads: list, rank: int, value=None):
    """(x, per-dim padding) for torch's convolutions and pools, which pad both sides alike:
    asymmetric padding is an explicit ``F.pad`` before (of ``value``), the op's padding 0."""
    if pads[:rank] == pads[rank:]:
        return x, pads[:rank]
    if value is None:
        raise NotExportable("asymmetric padding")
    flat = [v for i in reversed(range(rank)) for v in (pads[i], pads[rank + i])]
    return f"torch.nn.functional.pad({x}, {flat}, value={value})", [0] * rank


def _conv(rank, transpose: bool = False):
    def write(w, n, ins, tys):
        a = n.attrs
        data, kernel = "NC" + _SPATIAL[rank], ("IO" if transpose else "OI") + _SPATIAL[rank]
        dl, kl = a.get("data_layout") or data, a.get("kernel_layout") or kernel
        if a.get("out_layout") not in (None, dl) or a.get("out_dtype") not in (None,
                                                                             tys[0].dtype):
            raise NotExportable("convolution out_layout or out_dtype")
        x = _to_canonical(w, ins[0], dl, data)
        x, pads = _padded(x, _pads(list(a["padding"]), rank), rank,
                          None if transpose else 0.0)
        k = _to_canonical(w, ins[1], kl, kernel)
        common = (f"stride={list(a['strides'])}, padding={pads}, "
                  f"dilation={list(a['dilation'])}, groups={a.get('groups', 1)}")
        if transpose:
            op = f"torch.nn.functional.conv_transpose{rank}d"
            y = (f"{op}({x}, {k}, {common}, "
                 f"output_padding={list(a.get('output_padding') or [0] * rank)})")
        else:
            y = f"torch.nn.functional.conv{rank}d({x}, {k}, {common})"
        return _from_canonical(y, dl, data)
    return TorchOp(write, ("float32", "float64", "bfloat16", "float16"))


def _pool(kind, rank):
    def write(w, n, ins, tys):
        a = n.attrs
        canon = "NC" + _SPATIAL[rank]
        layout = a.get("layout") or canon
        if a.get("out_layout") not in (None, layout):
            raise NotExportable("pool out_layout")
        size = list(a["pool_size"])
        x = _to_canonical(w, ins[0], layout, canon)
        pads = _pads(list(a["padding"]), rank)
        if any(2 * p > k for p, k in zip(pads, size * 2)) or pads[:rank] != pads[rank:]:
            # torch pads a pool at most half its kernel, alike on both sides: else F.pad
            # first, of -inf for max (never chosen), of 0 where avg counts the padding
            fill = ("float('-inf')" if kind == "max" else
                    "0.0" if a.get("count_include_pad") else None)
            if a.get("ceil_mode"):
                raise NotExportable("ceil_mode with explicit padding")
            x, pads = _padded(x, pads, rank, fill) if pads[:rank] != pads[rank:] else \
                (f"torch.nn.functional.pad({x}, "
                 f"{[v for p in reversed(pads[:rank]) for v in (p, p)]}, value={fill})"
                 if fill is not None else None, [0] * rank)
            if x is None:
                raise NotExportable("avg_pool padding beyond half the kernel")
        pads = pads[:rank]
        dil = list(a.get("dilation") or [1] * rank)
        common = (f"kernel_size={size}, stride={list(a['strides'])}, padding={pads}, "
                  f"ceil_mode={bool(a.get('ceil_mode'))}")
        if kind == "max":
            y = f"torch.nn.functional.max_pool{rank}d({x}, {common}, dilation={dil})"
        else:
            if any(d != 1 for d in dil):
                raise NotExportable("torch's avg_pool has no dilation")
            y = (f"torch.nn.functional.avg_pool{rank}d({x}, {common}, "
                 f"count_include_pad={bool(a.get('count_include_pad'))})")
        return _from_canonical(y, layout, canon)
    # torch's CPU avg_pool3d has float32 and float64 kernels only ("avg_pool3d_out_frame" not
    # implemented for 'Half' or 'BFloat16'): 2 of 81 PyTorch cases of a campaign were refused
    return TorchOp(write, ("float32", "float64") if (kind, rank) == ("avg", 3) else FL)


def _adaptive(rank):
    def write(w, n, ins, tys):
        a = n.attrs
        canon = "NC" + _SPATIAL[rank]
        layout = a.get("layout") or canon
        if a.get("out_layout") not in (None, layout):
            raise NotExportable("pool out_layout")
        size = a.get("output_size")
        dims = [tys[0].shape[layout.index(c)] for c in _SPATIAL[rank]]
        sizes = dims if size is None else ([size] * rank if isinstance(size, int)
                                           else list(size))
        x = _to_canonical(w, ins[0], layout, canon)
        y = (f"torch.nn.functional.adaptive_avg_pool{rank}d({x}, "
             f"[{', '.join(w.dim(s) for s in sizes)}])")
        return _from_canonical(y, layout, canon)
    return TorchOp(write, FL)


def _softmax(name):
    return TorchOp(lambda w, n, ins, tys:
                   f"torch.{name}({ins[0]}, dim={n.attrs.get('axis', -1)})", FL)


def _layer_norm(w, n, ins, tys):
    a, rank = n.attrs, tys[0].ndim
    axes = [x % rank for x in a["axes"]]
    if axes != list(range(axes[0], rank)) or not a.get("scale", True) or \
            not a.get("center", True):
        raise NotExportable("layer_norm normalizes trailing axes, with scale and bias")
    shape = w.shape(tys[0].shape[axes[0]:])
    return (f"torch.nn.functional.layer_norm({ins[0]}, {shape}, {ins[1]}, {ins[2]}, "
            f"eps={float(a['epsilon'])!r})")


def _rms_norm(w, n, ins, tys):
    a, rank = n.attrs, tys[0].ndim
    axes = [x % rank for x in a["axes"]]
    if axes != list(range(axes[0], rank)):
        raise NotExportable("rms_norm normalizes trailing axes")
    shape = w.shape(tys[0].shape[axes[0]:])
    return (f"torch.nn.functional.rms_norm({ins[0]}, {shape}, {ins[1]}, "
            f"eps={float(a['epsilon'])!r})")


def _channel_norm(n, tys, name: str) -> dict:
    """The attrs of a group_norm or instance_norm torch can write: channels at axis 1, every
    spatial axis normalized, scale and bias applied."""
    a, rank = n.attrs, tys[0].ndim
    axes = sorted(x % rank for x in a["axes"])
    if a["channel_axis"] % rank != 1 or axes != list(range(2, rank)) or \
            not a.get("scale", True) or not a.get("center", True):
        raise NotExportable(f"{name}: channels at 1, every spatial axis, scale and bias")
    return a


def _group_norm(w, n, ins, tys):
    a = _channel_norm(n, tys, "group_norm")
    return (f"torch.nn.functional.group_norm({ins[0]}, {int(a['num_groups'])}, {ins[1]}, "
            f"{ins[2]}, eps={float(a['epsilon'])!r})")


def _instance_norm(w, n, ins, tys):
    a = _channel_norm(n, tys, "instance_norm")
    return (f"torch.nn.functional.instance_norm({ins[0]}, weight={ins[1]}, bias={ins[2]}, "
            f"eps={float(a['epsilon'])!r})")


def _prelu(w, n, ins, tys):
    rank, ax = tys[0].ndim, n.attrs.get("axis", 1) % max(tys[0].ndim, 1)
    if rank >= 2 and ax == 1:
        return f"torch.nn.functional.prelu({ins[0]}, {ins[1]})"
    slope = f"{ins[1]}.reshape([-1] + {[1] * (rank - 1 - ax)})"
    return f"torch.where({ins[0]} >= 0, {ins[0]}, {ins[0]} * {slope})"


def _matmul(w, n, ins, tys):
    od = n.attrs.get("out_dtype")
    if od not in (None, "", tys[0].dtype) or tys[0].dtype != tys[1].dtype:
        raise NotExportable("matmul out_dtype")
    if tys[0].ndim == 0 or tys[1].ndim == 0:
        raise NotExportable("scalar matmul")
    return f"torch.matmul({ins[0]}, {ins[1]})"


def _topk(w, n, ins, tys):
    a, t = n.attrs, tys[0]
    ax = a.get("axis", -1)
    k = int(a["k"])
    if k < 1:
        d = t.shape[ax]
        k_expr = w.dim(d)
    else:
        k_expr = str(k)
    r = w.let(f"torch.topk({ins[0]}, {k_expr}, dim={ax}, "
              f"largest={bool(a.get('largest', True))}, sorted=True)")
    vals, idx = f"{r}[0]", f"{r}[1].to({torch_dtype(a.get('dtype') or 'int32')})"
    return {"both": [vals, idx], "values": vals, "indices": idx}[a.get("ret_type", "both")]


def _sort(indices):
    def write(w, n, ins, tys):
        ax, desc = n.attrs.get("axis", -1), bool(n.attrs.get("descending"))
        if not indices:
            return f"torch.sort({ins[0]}, dim={ax}, descending={desc}, stable=True)[0]"
        dt = n.attrs.get("dtype") or "int32"
        return (f"torch.argsort({ins[0]}, dim={ax}, descending={desc}, stable=True)"
                f".to({torch_dtype(dt)})")
    return TorchOp(write)


def _filled(value_of, like: bool):
    def write(w, n, ins, tys):
        dt = torch_dtype(n.ty.dtype)
        shape = f"{ins[0]}.shape" if like else w.shape(n.attrs["shape"])
        return f"torch.full({shape}, {value_of(n)!r}, dtype={dt})"
    return TorchOp(write)


def _outer(w, n, ins, tys):
    return f"torch.outer({ins[0]}, {ins[1]})"


U = lambda name, dtypes=FL: _fn(name, dtypes)   # noqa: E731
NUM = FL + INT
SIGNED = FL + ("int8", "int32", "int64")

WRITERS: dict[str, TorchOp] = {
    # elementwise, unary
    "relax.abs": U("torch.abs", NUM), "relax.negative": U("torch.negative", SIGNED),
    "relax.exp": U("torch.exp"), "relax.log": U("torch.log"), "relax.sqrt": U("torch.sqrt"),
    "relax.rsqrt": U("torch.rsqrt"), "relax.square": U("torch.square", NUM),
    **{f"relax.{n}": U(f"torch.{n}") for n in ("sin", "cos", "tan", "sinh", "cosh", "asin",
                                                "acos", "atan", "asinh", "acosh", "atanh",
                                                "tanh", "erf", "sigmoid", "floor", "ceil",
                                                "round", "trunc")},
    "relax.sign": U("torch.sign", NUM),
    "relax.isfinite": U("torch.isfinite"), "relax.isinf": U("torch.isinf"),
    "relax.isnan": U("torch.isnan"),
    "relax.bitwise_not": U("torch.bitwise_not", INT),
    "relax.logical_not": U("torch.logical_not", ("bool",)),
    "relax.nn.relu": U("torch.relu"), "relax.nn.silu": U("torch.nn.functional.silu"),
    "relax.nn.gelu": _fn("torch.nn.functional.gelu", FL, approximate="none"),
    "relax.nn.gelu_tanh": _fn("torch.nn.functional.gelu", FL, approximate="tanh"),
    "relax.nn.selu": U("torch.selu"),
    "relax.nn.softplus": TorchOp(_softplus, FL),
    "relax.nn.leakyrelu": _attr_fn("torch.nn.functional.leaky_relu", FL, negative_slope="alpha"),
    "relax.clip": TorchOp(_clip, NUM),
    # elementwise, binary (torch's broadcasting is numpy's)
    "relax.add": _fn("torch.add", NUM), "relax.subtract": _fn("torch.subtract", NUM),
    "relax.multiply": _fn("torch.multiply", NUM), "relax.divide": _fn("torch.divide", FL),
    "relax.power": _fn("torch.pow", FL), "relax.maximum": _fn("torch.maximum", NUM),
    "relax.minimum": _fn("torch.minimum", NUM),
    "relax.floor_divide": _fn("torch.floor_divide", NUM),
    "relax.floor_mod": _fn("torch.remainder", NUM), "relax.mod": _fn("torch.fmod", NUM),
    "relax.atan2": _fn("torch.atan2", FL), "relax.log_add_exp": _fn("torch.logaddexp", FL),
    "relax.equal": _fn("torch.eq"), "relax.not_equal": _fn("torch.ne"),
    "relax.greater": _fn("torch.gt"), "relax.less": _fn("torch.lt"),
    "relax.greater_equal": _fn("torch.ge"), "relax.less_equal": _fn("torch.le"),
    "relax.logical_and": _fn("torch.logical_and", ("bool",)),
    "relax.logical_or": _fn("torch.logical_or", ("bool",)),
    "relax.logical_xor": _fn("torch.logical_xor", ("bool",)),
    "relax.bitwise_and": _fn("torch.bitwise_and", INT + ("bool",)),
    "relax.bitwise_or": _fn("torch.bitwise_or", INT + ("bool",)),
    "relax.bitwise_xor": _fn("torch.bitwise_xor", INT + ("bool",)),
    "relax.left_shift": _fn("torch.bitwise_left_shift", INT),
    "relax.right_shift": _fn("torch.bitwise_right_shift", INT),
    # reductions
    "relax.sum": TorchOp(_reduce("torch.sum").write, NUM),
    "relax.mean": TorchOp(_reduce("torch.mean").write, FL),
    "relax.max": TorchOp(_reduce("torch.amax").write, NUM),
    "relax.min": TorchOp(_reduce("torch.amin").write, NUM),
    "relax.prod": TorchOp(_prod, NUM),
    "relax.variance": _moments("var"), "relax.std": _moments("std"),
    "relax.argmax": _arg("argmax"), "relax.argmin": _arg("argmin"),
    "relax.cumsum": _scan("cumsum"), "relax.cumprod": _scan("cumprod"),
    # shapes
    "relax.reshape": TorchOp(_reshape), "relax.flatten": _fn("torch.flatten"),
    "relax.nn.batch_flatten": _fn("torch.flatten", start_dim=1),
    "relax.squeeze": TorchOp(_squeeze), "relax.expand_dims": TorchOp(_unsqueeze),
    "relax.permute_dims": TorchOp(_permute), "relax.broadcast_to": TorchOp(_broadcast),
    "relax.concat": TorchOp(_concat),
    "relax.stack": TorchOp(lambda w, n, ins, tys:
                           f"torch.stack([{', '.join(ins)}], dim={n.attrs['axis']})"),
    "relax.split": TorchOp(_split), "relax.tile": TorchOp(_tile),
    "relax.repeat": TorchOp(_repeat),
    "relax.flip": TorchOp(lambda w, n, ins, tys: f"torch.flip({ins[0]}, [{n.attrs['axis']}])"),
    "relax.nn.pad": TorchOp(_pad), "relax.astype": TorchOp(_cast),
    # indexing
    "relax.strided_slice": TorchOp(_slice), "relax.take": TorchOp(_take),
    "relax.gather_elements": TorchOp(_gather_elements),
    "relax.where": TorchOp(_where), "relax.tril": _tri("tril"), "relax.triu": _tri("triu"),
    # nn
    **{f"relax.nn.conv{r}d": _conv(r) for r in (1, 2, 3)},
    **{f"relax.nn.conv{r}d_transpose": _conv(r, transpose=True) for r in (1, 2, 3)},
    **{f"relax.nn.max_pool{r}d": _pool("max", r) for r in (1, 2, 3)},
    **{f"relax.nn.avg_pool{r}d": _pool("avg", r) for r in (1, 2, 3)},
    **{f"relax.nn.adaptive_avg_pool{r}d": _adaptive(r) for r in (1, 2, 3)},
    "relax.nn.softmax": _softmax("softmax"), "relax.nn.log_softmax": _softmax("log_softmax"),
    "relax.nn.layer_norm": TorchOp(_layer_norm, FL),
    "relax.nn.rms_norm": TorchOp(_rms_norm, FL),
    "relax.nn.group_norm": TorchOp(_group_norm, FL),
    "relax.nn.instance_norm": TorchOp(_instance_norm, FL),
    "relax.nn.prelu": TorchOp(_prelu, FL),
    # linalg, sort
    "relax.matmul": TorchOp(_matmul, FL + ("int32", "int64")),
    "relax.einsum": TorchOp(lambda w, n, ins, tys:
                            f"torch.einsum({n.attrs['subscripts']!r}, {', '.join(ins)})", FL),
    "relax.outer": TorchOp(_outer, NUM),
    "relax.topk": TorchOp(_topk), "relax.sort": _sort(False), "relax.argsort": _sort(True),
    # creation
    "relax.zeros": _filled(lambda n: 0, False), "relax.ones": _filled(lambda n: 1, False),
    "relax.full": _filled(lambda n: n.attrs["fill_value"], False),
    "relax.zeros_like": _filled(lambda n: 0, True), "relax.ones_like": _filled(lambda n: 1, True),
    "relax.full_like": _filled(lambda n: n.attrs["fill_value"], True),
}
EXPORTABLE_OPS = tuple(sorted(WRITERS))


# --- the export ---------------------------------------------------------------------------
def _weight_params(f: Function, options: TorchOptions) -> set:
    if not options.weights:
        return set()
    return {p.name for p in f.params[1:]
            if isinstance(p.runtime_ty, TensorTy) and p.runtime_ty.shape is not None
            and all(D.is_static(d) for d in p.runtime_ty.shape)}


def _literal(a) -> str:
    a = np.asarray(a)
    dt = "bfloat16" if a.dtype.name == "bfloat16" else str(a.dtype)
    values = a.astype(np.float32) if dt == "bfloat16" else a
    return (f"torch.tensor({values.ravel().tolist()!r}, dtype={torch_dtype(dt)})"
            f".reshape({list(a.shape)!r})")


# Attributes whose value is a string: always compared, looked up or written with repr(). Every
# other attribute must be a number, a bool, None or a list of them, since the writers format
# numbers into the source: a case from outside cannot put code into it.
STRING_ATTRS = {"subscripts", "pad_mode", "mode", "ret_type", "dtype", "out_dtype", "layout",
                "out_layout", "data_layout", "kernel_layout", "approximate", "reduction",
                "fill_dtype", "func"}


def _plain(v) -> bool:
    if isinstance(v, (list, tuple)):
        return all(_plain(x) for x in v)
    return v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and _dim_ok(v))


def _dim_ok(d: str) -> bool:
    """A symbolic dim: names, integers and + - * // only (``Writer.dim`` writes nothing else)."""
    try:
        tree = D.parse(d)
    except Exception:  # noqa: BLE001 - not a dim expression
        return False
    return all(isinstance(x, (ast.Name, ast.BinOp, ast.UnaryOp, ast.Load, ast.Add, ast.Sub,
                              ast.Mult, ast.FloorDiv, ast.USub))
               or (isinstance(x, ast.Constant) and type(x.value) is int)
               for x in ast.walk(tree))


def source_problem(program: Program) -> Optional[str]:
    """Why ``program``'s values cannot be written into Python source safely, or None: names
    must be identifiers, attributes plain values (strings only where ``STRING_ATTRS`` says,
    which the writers never format unquoted)."""
    import keyword
    import re

    ident = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
    for f in program.functions:
        for name in [p.name for p in f.params] + [n.name for n in f.nodes()]:
            if not isinstance(name, str) or not ident.match(name) or keyword.iskeyword(name):
                return f"the name {str(name)[:40]!r} is not a plain identifier"
        for n in f.nodes():
            for k, v in (n.attrs or {}).items():
                if isinstance(v, dict):   # match_cast's type
                    continue
                if not (_plain(v) or (k in STRING_ATTRS and isinstance(v, str))):
                    return f"attribute {str(k)[:40]!r} of {n.name} is not a plain value"
    return None


def module_source(program: Program, options: TorchOptions, arrays: Optional[list] = None) -> str:
    """The Python source of ``class Model(torch.nn.Module)`` for ``program`` and ``DYNAMIC``
    (input -> {axis: dim name}) for ``torch.export``; ``arrays`` (the entry function's inputs,
    ``fuzz.inputs.make_inputs``) give the weights' values. Raises NotExportable."""
    f = program.main
    problem = source_problem(program)
    if problem:
        raise NotExportable(problem)
    if program.meta.get("mode") == "near-valid":
        raise NotExportable("near-valid mutants (annotations) have no torch form")
    weights = _weight_params(f, options)
    if weights and arrays is None:
        raise NotExportable("weights need the input arrays")
    dim_sources, dynamic = {}, {}
    for i, p in enumerate(f.params):
        t = p.ty
        if not isinstance(t, TensorTy):
            raise NotExportable("a tuple-typed input")
        hidden = t.shape is None or not t.dtype   # its type hides it: the actual one, dynamic
        t = p.runtime_ty
        if not isinstance(t, TensorTy) or t.shape is None or not t.dtype:
            raise NotExportable("an input of unknown shape or dtype")
        torch_dtype(t.dtype)
        for j, d in enumerate(t.shape):
            if D.is_static(d):
                if (hidden or options.dynamic and i == 0) and p.name not in weights:
                    dynamic.setdefault(p.name, {})[j] = f"{p.name}_d{j}"
                continue
            if D.free_vars(d) != [d] or d != d.strip():
                raise NotExportable(f"an input dim {d!r} that is an expression")
            if p.name in weights:
                continue
            dim_sources.setdefault(d, (p.name, j))
            dynamic.setdefault(p.name, {})[j] = d
    w = Writer(dim_sources)
    env = {p.name: [p.name if p.name not in weights else f"self.{p.name}"] for p in f.params}
    types = {p.name: p.runtime_ty for p in f.params}
    _write_function(program, f, w, env, types)
    outs = [x for x in env[f.ret]]
    init = ["    def __init__(self):", "        super().__init__()"]
    for i, p in enumerate(f.params):
        if p.name in weights:
            init.append(f"        self.{p.name} = torch.nn.Parameter({_literal(arrays[i])}, "
                        f"requires_grad=False)")
    args = ", ".join(["self"] + [p.name for p in f.params if p.name not in weights])
    lines = ["import torch", "", "", "class Model(torch.nn.Module):", *init, "",
             f"    def forward({args}):"]
    lines += [f"        {x}" for x in w.lines]
    lines.append(f"        return ({''.join(o + ', ' for o in outs)})")
    lines += ["", "", f"DYNAMIC = {dynamic!r}", ""]
    return "\n".join(lines)


def _write_function(program: Program, f: Function, w: Writer, env: dict, types: dict) -> None:
    """Write ``f``'s nodes into ``w``; ``env`` maps each value to its expressions (a tuple's
    fields, each a local name), ``types`` to its model type. A ``call`` is inlined."""
    for n in f.nodes():
        if n.annot is not None:
            raise NotExportable("an annotation (near-valid)")
        for t in _tensor_types(n.ty):
            torch_dtype(t.dtype)
        if n.op == "tuple":
            env[n.name] = [x for a in n.args for x in env[a]]
        elif n.op == "get_item":
            ty = types[n.args[0]]
            if not isinstance(ty, TupleTy) or not all(isinstance(t, TensorTy)
                                                      for t in ty.fields):
                raise NotExportable("nested tuples")
            env[n.name] = [env[n.args[0]][int(n.attrs["index"])]]
        elif n.op == "match_cast":
            env[n.name] = env[n.args[0]]
        elif n.op == "const":
            t = n.ty
            env[n.name] = [w.let(f"torch.full({w.shape(t.shape)}, {n.attrs['value']!r}, "
                                 f"dtype={torch_dtype(t.dtype)})")]
        elif n.op == "call":
            callee = program.func(n.attrs["func"])
            inner_env = {p.name: env[a] for p, a in zip(callee.params, n.args)}
            inner_types = {p.name: types[a] for p, a in zip(callee.params, n.args)}
            _write_function(program, callee, w, inner_env, inner_types)
            env[n.name] = list(inner_env[callee.ret])
        else:
            spec = WRITERS.get(n.op)
            if spec is None:
                raise NotExportable(f"{n.op} has no torch form here")
            ins = [x for a in n.args for x in env[a]]
            tys = [t for a in n.args for t in _tensor_types(types[a])]
            out = spec(w, n, ins, tys)
            fields = _tensor_types(n.ty)
            exprs = out if isinstance(out, list) else [out]
            if len(exprs) != len(fields):
                raise NotExportable(f"{n.op} returns {len(fields)} values here")
            names = []
            for e, t in zip(exprs, fields):
                # torch promotes (integer sums to int64, argmax's int64): Relax's dtype back
                names.append(w.let(f"_as({e}, {torch_dtype(t.dtype)})"))
            env[n.name] = names
        types[n.name] = n.ty


def _tensor_types(ty) -> list:
    if isinstance(ty, TupleTy):
        return [t for f in ty.fields for t in _tensor_types(f)]
    return [ty]


# The helper every module's forward uses: a value in the node's Relax dtype.
HELPERS = '''
def _as(x, dtype):
    return x if x.dtype == dtype else x.to(dtype)
'''


def full_source(program: Program, options: TorchOptions, arrays: Optional[list] = None) -> str:
    """``module_source`` with its helper: the whole text a judge or repro.py executes."""
    src = module_source(program, options, arrays)
    head, rest = src.split("\n\n\nclass Model", 1)
    return head + "\n" + HELPERS + "\n\nclass Model" + rest


def exportable(program: Program) -> Optional[str]:
    """None when ``program`` has a torch form (plain options), else why not."""
    try:
        module_source(program, TorchOptions())
        return None
    except NotExportable as e:
        return str(e)


def user_inputs(program: Program, options: TorchOptions, arrays: list) -> dict:
    """forward's inputs by name: the entry function's inputs less the weights."""
    weights = _weight_params(program.main, options)
    return {p.name: a for p, a in zip(program.main.params, arrays) if p.name not in weights}
