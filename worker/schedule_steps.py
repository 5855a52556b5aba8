"""Random s_tir schedules as replayable data: the step generators and the application of steps.

A schedule is a list of steps, each plain JSON that names what it works on by stable names,
never by object handles: the PrimFunc (its GlobalVar's name), blocks by name, loops by their
index in ``get_loops(block)``, buffers by ``("read" | "write", index)`` in a block's regions.
Replaying the same steps on the same module gives the same module, so a schedule travels in
case JSON, and the reducer drops steps and replays the rest (``apply_schedule``)::

    {"func": "matmul", "prim": "split", "block": "C", "loop": 1, "factors": [None, 4],
     "preserve_unit_iters": True, "disable_predication": False}

Every step runs on a fresh ``Schedule`` of the function's current IRModule (IRModules are
immutable values, a schedule works copy-on-write), so a primitive that TVM refuses
(``ScheduleError``: a precondition the primitive checks, e.g. "Cannot operate on an output
block") leaves nothing behind: the step is counted as refused and the next one starts from the
state before it. Any other exception while applying a primitive is a finding candidate and
propagates, with the step that raised it attached (``exc.schedule_step``,
``exc.schedule_applied``, and a note on the exception); so does ill-formed TIR left by a
primitive (``s_tir.analysis.verify_well_formed`` runs after every step, so the step that made
it is blamed, not the next one). ``ScheduleStats`` counts, per primitive, steps tried, applied,
refused (with TVM's reasons) and skipped (nothing to apply it to).

Primitives that change the program's meaning are not fuzzed (``unsafe_set_dtype``,
``unsafe_hide_buffer_access``, ``annotate_buffer_access``); ``tensorize`` needs intrinsics;
``bind`` is GPU-only. ``fuse_reduction_epilogue`` changes numerics on purpose for its
non-linear patterns (documented in TVM), so a schedule using it is compared for crashes only
(``is_exact``). ``transform_layout`` only touches buffers the function allocates: a parameter's
layout is part of the function's signature (Relax's ``call_tir`` passes tensors of the old
shape).

``STABLE_PRIMITIVES`` leaves out the primitives that TVM 0.27's known schedule defects
(``KNOWN_BUGS``, fuzz/tir/schedule_bugs.py) need, for tests that want schedules TVM gets right.
"""
from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from fuzz.tir.schedule_bugs import KNOWN_BUGS

from . import breadcrumb

# The primitives fuzzed, with their weight when a step picks one.
PRIMITIVES: dict[str, int] = {
    "split": 4, "reorder": 3, "fuse": 3, "vectorize": 2, "parallel": 2, "unroll": 2,
    "cache_read": 2, "cache_write": 2, "compute_at": 3, "reverse_compute_at": 3,
    "compute_inline": 3, "reverse_compute_inline": 3, "decompose_reduction": 3, "rfactor": 3,
    "storage_align": 1, "set_scope": 1, "blockize": 1, "annotate": 1, "unannotate": 1,
    "loop_partition": 2, "pad_einsum": 1, "transform_layout": 1, "transform_block_layout": 1,
    "add_unit_loop": 1, "reorder_block_iter_var": 1, "reindex": 1, "decompose_padding": 1,
    "fuse_reduction_epilogue": 1, "bind": 2,
}
GPU_ONLY = frozenset({"bind"})
# Primitives whose result may differ numerically from the input by design (TVM documents it).
INEXACT = frozenset({"fuse_reduction_epilogue"})
CPU_SCOPES = ("global", "local")
GPU_SCOPES = ("global", "local", "shared")
THREAD_AXES = ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y", "vthread.x")
# Annotations the CPU lowering reads (UnrollLoop, LoopPartition) plus one nobody reads.
ANNOTATIONS = (("pragma_auto_unroll_max_step", (0, 4, 16, 64)), ("pragma_unroll_explicit", (0, 1)),
               ("pragma_loop_partition_hint", (1,)), ("tvmfuzz_note", ("x",)))


class StepRefused(Exception):
    """A schedule step does not apply: TVM refused it (``ScheduleError``) or what it names (a
    block, a loop index, a buffer) is not there. Not a TVM bug."""

    def __init__(self, step: dict, reason: str):
        super().__init__(f"{step.get('prim')}: {reason}")
        self.step = step
        self.reason = reason


@dataclass
class ScheduleStats:
    """Per primitive: how often a step was generated (``tried``), applied, refused, or could not
    be generated at all (``skipped``: no candidate, e.g. rfactor without a reduction)."""
    tried: Counter = field(default_factory=Counter)
    applied: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)   # (prim, first line of the refusal)

    def merge(self, other: "ScheduleStats") -> None:
        for name in ("tried", "applied", "refused", "skipped", "reasons"):
            getattr(self, name).update(getattr(other, name))

    def to_json(self) -> dict:
        prims = sorted(set(self.tried) | set(self.skipped))
        return {p: {"tried": self.tried[p], "applied": self.applied[p],
                    "refused": self.refused[p], "skipped": self.skipped[p]} for p in prims}


def primitives_for(target_kind: str = "llvm",
                   primitives: Optional[dict[str, int]] = None) -> dict[str, int]:
    """``primitives`` (default PRIMITIVES) less those the target cannot run (bind on CPUs)."""
    gpu = target_kind in ("cuda", "rocm", "vulkan", "metal", "opencl", "webgpu")
    prims = PRIMITIVES if primitives is None else primitives
    return {p: w for p, w in prims.items() if gpu or p not in GPU_ONLY}


def is_exact(applied: list[dict]) -> bool:
    """The scheduled module must compute the same values as the input (up to float rounding)."""
    return not any(s.get("prim") in INEXACT for s in applied)


def dumps(applied: list[dict]) -> str:
    return json.dumps(applied, sort_keys=True)


# --- the TVM side -----------------------------------------------------------------------------
def _tvm():
    import tvm
    from tvm import s_tir

    return tvm, s_tir


def schedulable_funcs(mod) -> list[str]:
    """Names of the PrimFuncs in ``mod`` that have blocks to schedule (s_tir functions; Relax
    functions and lowered PrimFuncs are left alone), in a stable order."""
    tvm, _ = _tvm()
    out = []
    for gv, f in mod.functions.items():
        if isinstance(f, tvm.tirx.PrimFunc) and f.attrs is not None and f.attrs.get("s_tir", False):
            out.append(gv.name_hint)
    return sorted(out)


def _new_schedule(mod, func: str):
    """A fresh schedule of the one-function module holding ``func``."""
    tvm, s_tir = _tvm()
    gv = mod.get_global_var(func)
    sch = s_tir.Schedule(tvm.IRModule({gv: mod[gv]}), error_render_level="fast")
    sch.work_on(func)
    return sch


class _Ctx:
    """Resolves a step's names to a schedule's handles; StepRefused when they are gone."""

    def __init__(self, sch, step: dict):
        self.sch = sch
        self.step = step

    def refuse(self, why: str):
        raise StepRefused(self.step, why)

    def block(self, name: str):
        n = block_names(self.sch).count(name)
        if n != 1:
            self.refuse(f"{n} blocks named {name!r}")
        return self.sch.get_sblock(name)

    def loop(self, block: str, i: int):
        loops = self.sch.get_loops(self.block(block))
        if not 0 <= i < len(loops):
            self.refuse(f"block {block!r} has {len(loops)} loops, not {i + 1}")
        return loops[i]

    def loops(self, block: str, idx: list[int]):
        loops = self.sch.get_loops(self.block(block))
        if any(not 0 <= i < len(loops) for i in idx):
            self.refuse(f"block {block!r} has {len(loops)} loops")
        return [loops[i] for i in idx]

    def index_map(self, spec: dict, shape: list, dtype: str):
        """The step's index map, for a buffer or block domain of ``shape`` (extents, None
        where not constant); refused when it no longer fits (an earlier step was dropped)."""
        ndim, kind = len(shape), spec.get("kind")
        fits = {"permute": lambda: sorted(spec["perm"]) == list(range(ndim)),
                "split": lambda: 0 <= spec["axis"] < ndim and spec["factor"] > 0,
                "fuse": lambda: list(spec["shape"]) == list(shape)}.get(kind, lambda: False)
        if not fits():
            self.refuse(f"index map {spec} does not fit shape {shape}")
        return _index_map(spec, ndim, dtype)

    def annotated(self, target, key: str):
        if key not in self.sch.get(target).annotations:
            self.refuse(f"no annotation {key!r}")
        return target

    def region(self, block: str, which: str, i: int):
        b = self.sch.get(self.block(block))
        regions = b.reads if which == "read" else b.writes
        if not 0 <= i < len(regions):
            self.refuse(f"block {block!r} has {len(regions)} {which} buffers")
        return _src(regions[i])


def _src(region):
    """A BufferRegion's buffer: ``.source`` on 0.27, ``.buffer`` on 0.25 and 0.26."""
    src = getattr(region, "source", None)
    return src if src is not None else region.buffer


def block_names(sch) -> list[str]:
    """All block names below the root, in pre-order (stable for one IR). A name can repeat
    (loop_partition copies a block); steps only name blocks whose name is unique."""
    out: list[str] = []

    def walk(rv):
        for c in sch.get_child_blocks(rv):
            out.append(sch.get(c).name_hint)
            walk(c)

    _, s_tir = _tvm()
    try:
        root = sch.get_sblock("root")
    except s_tir.ScheduleError:
        return out   # a PrimFunc without blocks (plain loops): nothing to schedule
    walk(root)
    return out


def _extent(sch, loop) -> Optional[int]:
    e = sch.get(loop).extent
    return int(e.value) if hasattr(e, "value") else None


def _is_reduction(sch, block_rv) -> bool:
    return any(int(iv.iter_type) == 2 for iv in sch.get(block_rv).iter_vars)


def _param_buffers(sch) -> list:
    """The function's parameters (0.27: a buffer is a Var; scalars are Vars too)."""
    func = sch.mod[sch.func_working_on]
    # 0.25/0.26: parameter buffers are the buffer_map's values, not the params themselves.
    bmap = getattr(func, "buffer_map", None)   # absent on 0.27
    return list(func.params) + (list(bmap.values()) if bmap is not None else [])


def _index_dtype(block) -> str:
    """The index dtype TVM's own schedule gives index maps of ``block`` (its first iter var's,
    else its first region's, else int64)."""
    for iv in block.iter_vars:
        return _dtype(iv.var)
    for r in list(block.reads) + list(block.writes):
        for dom in r.region:
            return _dtype(dom.min)
    return "int64"


def _dtype(expr) -> str:
    """An expression's dtype: ``.ty`` on 0.27, ``.dtype`` on 0.25 and 0.26."""
    ty = getattr(expr, "ty", None)
    return str(ty if ty is not None else expr.dtype)


def _reduction_loops(sch, block_rv) -> list[int]:
    """Indices of the loops that a reduction iter var of the block is bound to."""
    tvm, _ = _tvm()
    try:
        realize = tvm.get_global_func("s_tir.schedule.GetSBlockRealize")(sch, block_rv)
    except Exception:  # noqa: BLE001
        return []
    red_vars = set()
    for iv, val in zip(realize.block.iter_vars, realize.iter_values):
        if int(iv.iter_type) == 2:
            red_vars |= {v.name for v in tvm.tirx.analysis.undefined_vars(val)}
    return [i for i, lp in enumerate(sch.get_loops(block_rv))
            if sch.get(lp).loop_var.name in red_vars]


def _index_map(spec: dict, ndim: int, dtype: str):
    """A simple index map from its JSON form: a permutation, one axis split by a factor, or all
    axes fused into one."""
    tvm, _ = _tvm()
    return tvm.tirx.IndexMap.from_func(_index_fn(spec, ndim), ndim=ndim, index_dtype=dtype)


def _index_fn(spec: dict, ndim: int) -> Callable:
    kind = spec["kind"]
    if kind == "permute":
        perm = spec["perm"]
        return lambda *ax: [ax[p] for p in perm]
    if kind == "split":
        a, f = spec["axis"], spec["factor"]
        return lambda *ax: [*ax[:a], ax[a] // f, ax[a] % f, *ax[a + 1:]]
    if kind == "fuse":
        shape = spec["shape"]

        def fused(*ax):
            acc = ax[0]
            for x, n in zip(ax[1:], shape[1:]):
                acc = acc * n + x
            return [acc]
        return fused
    raise ValueError(f"unknown index map {kind!r}")


# --- step generators: (sch, rng, block names, target kind) -> step or None ------------------
def _divisors(n: int) -> list[int]:
    return [d for d in range(2, n) if n % d == 0]


def _factors(rng: random.Random, extent: Optional[int], parts: int) -> tuple[list, bool]:
    """Split factors with one None; True when they divide the extent exactly."""
    known = []
    for _ in range(parts - 1):
        divs = _divisors(extent) if extent else []
        known.append(rng.choice(divs) if divs and rng.random() < 0.7 else rng.randint(2, 8))
    prod = 1
    for k in known:
        prod *= k
    factors: list = list(known)
    factors.insert(rng.randrange(parts), None)
    return factors, bool(extent) and extent % prod == 0


def _pick_loop(sch, rng, blocks, inner_bias: float = 0.0):
    b = rng.choice(blocks)
    loops = sch.get_loops(sch.get_sblock(b))
    if not loops:
        return None
    i = len(loops) - 1 if rng.random() < inner_bias else rng.randrange(len(loops))
    return b, i, loops[i]


def _g_split(sch, rng, blocks, kind, prim="split"):
    p = _pick_loop(sch, rng, blocks)
    if not p:
        return None
    b, i, lp = p
    factors, exact = _factors(rng, _extent(sch, lp), 3 if rng.random() < 0.25 else 2)
    step = {"prim": prim, "block": b, "loop": i, "factors": factors,
            "preserve_unit_iters": rng.random() < 0.8}
    if prim == "split":
        step["disable_predication"] = exact and rng.random() < 0.15
    return step


def _g_loop_partition(sch, rng, blocks, kind):
    return _g_split(sch, rng, blocks, kind, "loop_partition")


def _g_reorder(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    n = len(sch.get_loops(sch.get_sblock(b)))
    if n < 2:
        return None
    idx = rng.sample(range(n), rng.randint(2, n))
    return {"prim": "reorder", "block": b, "loops": idx}


def _g_fuse(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    n = len(sch.get_loops(sch.get_sblock(b)))
    if n < 2:
        return None
    i = rng.randrange(n - 1)
    j = rng.randint(i + 1, n - 1)
    return {"prim": "fuse", "block": b, "loops": list(range(i, j + 1)),
            "preserve_unit_iters": rng.random() < 0.8}


def _g_loop_only(prim, inner_bias=0.0):
    def gen(sch, rng, blocks, kind):
        p = _pick_loop(sch, rng, blocks, inner_bias)
        return p and {"prim": prim, "block": p[0], "loop": p[1]}
    return gen


def _g_parallel(sch, rng, blocks, kind):
    """A loop with no parallel loop above or below it: nested parallel loops are a codegen
    precondition the schedule does not check (CodeGenCPU: "Nested parallel loop is not
    supported by threadpool"), so generating them would only make noise."""
    p = _pick_loop(sch, rng, blocks)
    if not p:
        return None
    lp = sch.get(p[2])
    for b in blocks:
        loops = [sch.get(x) for x in sch.get_loops(sch.get_sblock(b))]
        if any(x.same_as(lp) for x in loops) and any(
                int(x.kind) == 1 and not x.same_as(lp) for x in loops):
            return None
    return {"prim": "parallel", "block": p[0], "loop": p[1]}


def _g_bind(sch, rng, blocks, kind):
    p = _pick_loop(sch, rng, blocks)
    return p and {"prim": "bind", "block": p[0], "loop": p[1], "thread": rng.choice(THREAD_AXES)}


def _scopes(kind):
    return CPU_SCOPES if kind == "llvm" or kind == "c" else GPU_SCOPES


def _g_cache(prim, which):
    def gen(sch, rng, blocks, kind):
        b = rng.choice(blocks)
        blk = sch.get(sch.get_sblock(b))
        n = len(blk.reads if which == "read" else blk.writes)
        if not n:
            return None
        return {"prim": prim, "block": b, "buffer_index": rng.randrange(n),
                "scope": rng.choice(_scopes(kind))}
    return gen


def _g_reindex(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    blk = sch.get(sch.get_sblock(b))
    choices = [("read", i) for i in range(len(blk.reads))] + \
              [("write", i) for i in range(len(blk.writes))]
    if not choices:
        return None
    which, i = rng.choice(choices)
    return {"prim": "reindex", "block": b, "buffer": [which, i]}


def _g_compute_at(prim):
    def gen(sch, rng, blocks, kind):
        b = rng.choice(blocks)
        rv = sch.get_sblock(b)
        near = sch.get_consumers(rv) if prim == "compute_at" else sch.get_producers(rv)
        near = [n for n in (sch.get(x).name_hint for x in near) if n in blocks]
        # Mostly a real producer/consumer; sometimes any other block: TVM must refuse a move
        # that breaks the dataflow (0.27 does not always, see KNOWN_BUGS).
        others = [x for x in blocks if x != b]
        pool = near if near and rng.random() < 0.85 else others
        if not pool:
            return None
        t = rng.choice(pool)
        n = len(sch.get_loops(sch.get_sblock(t)))
        if not n:
            return None
        return {"prim": prim, "block": b, "target": t, "loop": rng.randrange(n),
                "preserve_unit_loops": rng.random() < 0.3,
                "index": rng.choice((-1, -1, -1, -2))}
    return gen


def _g_inline(prim):
    """Mostly a block TVM may inline (no reduction; compute_inline: writes no parameter;
    reverse_compute_inline: reads one buffer), sometimes any block."""
    def likely(sch, b):
        rv = sch.get_sblock(b)
        blk = sch.get(rv)
        if _is_reduction(sch, rv):
            return False
        if prim == "compute_inline":
            params = _param_buffers(sch)
            return not any(_src(w).same_as(p) for w in blk.writes for p in params)
        return len(blk.reads) == 1

    def gen(sch, rng, blocks, kind):
        cands = [b for b in blocks if likely(sch, b)]
        return {"prim": prim, "block": rng.choice(cands if cands and rng.random() < 0.8
                                                  else blocks)}
    return gen


def _reduction_blocks(sch, blocks):
    return [b for b in blocks if _is_reduction(sch, sch.get_sblock(b))]


def _pick_reduction(sch, rng, blocks):
    """(block name, its handle, its loop count, its reduction loops) of a random reduction
    block with loops, or None."""
    red = _reduction_blocks(sch, blocks)
    if not red:
        return None
    b = rng.choice(red)
    rv = sch.get_sblock(b)
    n = len(sch.get_loops(rv))
    return (b, rv, n, _reduction_loops(sch, rv)) if n else None


def _g_decompose_reduction(sch, rng, blocks, kind):
    picked = _pick_reduction(sch, rng, blocks)
    if picked is None:
        return None
    b, rv, n, cands = picked
    # decompose at (or above) the first reduction loop is what applies; sometimes anywhere
    i = min(cands) if cands and rng.random() < 0.6 else rng.randrange(n)
    if cands and rng.random() < 0.3:
        i = rng.randrange(min(cands) + 1)
    return {"prim": "decompose_reduction", "block": b, "loop": i}


def _g_rfactor(sch, rng, blocks, kind):
    picked = _pick_reduction(sch, rng, blocks)
    if picked is None:
        return None
    b, rv, n, cands = picked
    i = rng.choice(cands) if cands and rng.random() < 0.85 else rng.randrange(n)
    writes = sch.get(rv).writes
    rank = len(_src(writes[0]).shape) if writes else 0
    return {"prim": "rfactor", "block": b, "loop": i, "factor_axis": rng.randint(0, rank)}


def _g_storage_align(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    w = sch.get(sch.get_sblock(b)).writes
    if not w:
        return None
    i = rng.randrange(len(w))
    rank = len(_src(w[i]).shape)
    if not rank:
        return None
    factor = rng.choice((2, 4, 8, 16, 32))
    return {"prim": "storage_align", "block": b, "buffer_index": i,
            "axis": rng.randrange(rank), "factor": factor, "offset": rng.randrange(factor)}


def _g_set_scope(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    w = sch.get(sch.get_sblock(b)).writes
    if not w:
        return None
    return {"prim": "set_scope", "block": b, "buffer_index": rng.randrange(len(w)),
            "scope": rng.choice(_scopes(kind))}


def _g_blockize(sch, rng, blocks, kind):
    p = _pick_loop(sch, rng, blocks)
    return p and {"prim": "blockize", "block": p[0], "loop": p[1],
                  "preserve_unit_iters": rng.random() < 0.8}


def _g_annotate(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    n = len(sch.get_loops(sch.get_sblock(b)))
    loop = rng.randrange(n) if n and rng.random() < 0.8 else None
    # the pragmas are loop annotations: on a block, lowering hits an ICHECK (LoopPartition:
    # "Check failed: (var) is false"), a misuse, not a bug
    key, values = rng.choice(ANNOTATIONS if loop is not None else ANNOTATIONS[-1:])
    return {"prim": "annotate", "block": b, "loop": loop, "key": key, "value": rng.choice(values)}


def _g_unannotate(sch, rng, blocks, kind):
    cands = []
    for b in blocks:
        rv = sch.get_sblock(b)
        cands += [(b, None, k) for k in sch.get(rv).annotations.keys()]
        for i, lp in enumerate(sch.get_loops(rv)):
            cands += [(b, i, k) for k in sch.get(lp).annotations.keys()]
    if not cands:
        return None
    b, i, k = rng.choice(cands)
    return {"prim": "unannotate", "block": b, "loop": i, "key": str(k)}


def _g_pad_einsum(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    ivs = sch.get(sch.get_sblock(b)).iter_vars
    if not ivs:
        return None
    return {"prim": "pad_einsum", "block": b,
            "padding": [rng.choice((1, 1, 2, 4, 8, 16)) for _ in ivs]}


def _g_transform_layout(sch, rng, blocks, kind):
    params = _param_buffers(sch)
    cands = []
    for b in blocks:
        blk = sch.get(sch.get_sblock(b))
        for which, regions in (("read", blk.reads), ("write", blk.writes)):
            for i, r in enumerate(regions):
                if not any(_src(r).same_as(p) for p in params):
                    cands.append((b, which, i, _src(r)))
    if not cands:
        return None
    b, which, i, buf = rng.choice(cands)
    shape = [int(s.value) if hasattr(s, "value") else None for s in buf.shape]
    if not shape or None in shape:
        return None
    kinds = ["split"] + (["permute", "fuse"] if len(shape) > 1 else [])
    k = rng.choice(kinds)
    if k == "permute":
        perm = list(range(len(shape)))
        rng.shuffle(perm)
        m = {"kind": "permute", "perm": perm}
    elif k == "fuse":
        m = {"kind": "fuse", "shape": shape}
    else:
        a = rng.randrange(len(shape))
        divs = _divisors(shape[a])
        if not divs:
            return None
        m = {"kind": "split", "axis": a, "factor": rng.choice(divs)}
    return {"prim": "transform_layout", "block": b, "buffer": [which, i], "map": m}


def _iter_var_permutation(sch, rng, blocks):
    """(a random block with 2+ iteration variables, a random permutation of them), or None."""
    b = rng.choice(blocks)
    n = len(sch.get(sch.get_sblock(b)).iter_vars)
    if n < 2:
        return None
    perm = list(range(n))
    rng.shuffle(perm)
    return b, perm


def _g_transform_block_layout(sch, rng, blocks, kind):
    picked = _iter_var_permutation(sch, rng, blocks)
    if picked is None:
        return None
    return {"prim": "transform_block_layout", "block": picked[0],
            "map": {"kind": "permute", "perm": picked[1]}}


def _g_reorder_block_iter_var(sch, rng, blocks, kind):
    picked = _iter_var_permutation(sch, rng, blocks)
    if picked is None:
        return None
    return {"prim": "reorder_block_iter_var", "block": picked[0], "order": picked[1]}


def _g_add_unit_loop(sch, rng, blocks, kind):
    b = rng.choice(blocks)
    n = len(sch.get_loops(sch.get_sblock(b)))
    return {"prim": "add_unit_loop", "block": b,
            "loop": rng.randrange(n) if n and rng.random() < 0.5 else None}


def _g_decompose_padding(sch, rng, blocks, kind):
    p = _pick_loop(sch, rng, blocks)
    return p and {"prim": "decompose_padding", "block": p[0], "loop": p[1]}


def _g_fuse_reduction_epilogue(sch, rng, blocks, kind):
    red = _reduction_blocks(sch, blocks)
    if not red:
        return None
    b = rng.choice(red)
    cons = [n for n in (sch.get(x).name_hint for x in sch.get_consumers(sch.get_sblock(b)))
            if n in blocks]
    if not cons:
        return None
    return {"prim": "fuse_reduction_epilogue", "block": b, "target": rng.choice(cons)}


_GENERATORS: dict[str, Callable] = {
    "split": _g_split, "loop_partition": _g_loop_partition, "reorder": _g_reorder,
    "fuse": _g_fuse, "vectorize": _g_loop_only("vectorize", 0.7),
    "parallel": _g_parallel, "unroll": _g_loop_only("unroll", 0.5),
    "bind": _g_bind, "cache_read": _g_cache("cache_read", "read"),
    "cache_write": _g_cache("cache_write", "write"), "reindex": _g_reindex,
    "compute_at": _g_compute_at("compute_at"),
    "reverse_compute_at": _g_compute_at("reverse_compute_at"),
    "compute_inline": _g_inline("compute_inline"),
    "reverse_compute_inline": _g_inline("reverse_compute_inline"),
    "decompose_reduction": _g_decompose_reduction, "rfactor": _g_rfactor,
    "storage_align": _g_storage_align, "set_scope": _g_set_scope, "blockize": _g_blockize,
    "annotate": _g_annotate, "unannotate": _g_unannotate, "pad_einsum": _g_pad_einsum,
    "transform_layout": _g_transform_layout,
    "transform_block_layout": _g_transform_block_layout,
    "reorder_block_iter_var": _g_reorder_block_iter_var, "add_unit_loop": _g_add_unit_loop,
    "decompose_padding": _g_decompose_padding,
    "fuse_reduction_epilogue": _g_fuse_reduction_epilogue,
}
assert set(_GENERATORS) == set(PRIMITIVES)


# --- applying one step ------------------------------------------------------------------------
def _do(c: _Ctx, s: dict) -> None:
    sch, p = c.sch, s["prim"]
    if p in ("split", "loop_partition"):
        lp = c.loop(s["block"], s["loop"])
        if p == "split":
            sch.split(lp, list(s["factors"]), preserve_unit_iters=s["preserve_unit_iters"],
                      disable_predication=s.get("disable_predication", False))
        else:
            sch.loop_partition(lp, list(s["factors"]),
                               preserve_unit_iters=s["preserve_unit_iters"])
    elif p == "reorder":
        sch.reorder(*c.loops(s["block"], s["loops"]))
    elif p == "fuse":
        sch.fuse(*c.loops(s["block"], s["loops"]), preserve_unit_iters=s["preserve_unit_iters"])
    elif p in ("vectorize", "parallel", "unroll"):
        getattr(sch, p)(c.loop(s["block"], s["loop"]))
    elif p == "bind":
        sch.bind(c.loop(s["block"], s["loop"]), s["thread"])
    elif p in ("cache_read", "cache_write"):
        getattr(sch, p)(c.block(s["block"]), s["buffer_index"], s["scope"])
    elif p == "reindex":
        which, i = s["buffer"]
        c.region(s["block"], which, i)
        sch.reindex(c.block(s["block"]), (which, i))
    elif p in ("compute_at", "reverse_compute_at"):
        lp = c.loop(s["target"], s["loop"])
        getattr(sch, p)(c.block(s["block"]), lp, preserve_unit_loops=s["preserve_unit_loops"],
                        index=s["index"])
    elif p in ("compute_inline", "reverse_compute_inline"):
        getattr(sch, p)(c.block(s["block"]))
    elif p == "decompose_reduction":
        sch.decompose_reduction(c.block(s["block"]), c.loop(s["block"], s["loop"]))
    elif p == "rfactor":
        sch.rfactor(c.loop(s["block"], s["loop"]), s["factor_axis"])
    elif p == "storage_align":
        sch.storage_align(c.block(s["block"]), s["buffer_index"], s["axis"], s["factor"],
                          s["offset"])
    elif p == "set_scope":
        sch.set_scope(c.block(s["block"]), s["buffer_index"], s["scope"])
    elif p == "blockize":
        sch.blockize(c.loop(s["block"], s["loop"]), preserve_unit_iters=s["preserve_unit_iters"])
    elif p in ("annotate", "unannotate"):
        target = c.block(s["block"]) if s["loop"] is None else c.loop(s["block"], s["loop"])
        if p == "annotate":
            sch.annotate(target, s["key"], s["value"])
        else:   # a missing key is an IndexError from an ICHECK, not a ScheduleError
            sch.unannotate(c.annotated(target, s["key"]), s["key"])
    elif p == "pad_einsum":
        sch.pad_einsum(c.block(s["block"]), list(s["padding"]))
    elif p == "transform_layout":
        which, i = s["buffer"]
        buf = c.region(s["block"], which, i)
        if any(buf.same_as(b) for b in _param_buffers(sch)):
            c.refuse("transform_layout of a parameter buffer")
        rv = c.block(s["block"])
        shape = [int(x.value) if hasattr(x, "value") else None for x in buf.shape]
        sch.transform_layout(rv, (which, i), c.index_map(s["map"], shape,
                                                         _index_dtype(sch.get(rv))))
    elif p == "transform_block_layout":
        rv = c.block(s["block"])
        blk = sch.get(rv)
        dom = [int(iv.dom.extent.value) if hasattr(iv.dom.extent, "value") else None
               for iv in blk.iter_vars]
        sch.transform_block_layout(rv, c.index_map(s["map"], dom, _index_dtype(blk)))
    elif p == "reorder_block_iter_var":
        sch.reorder_block_iter_var(c.block(s["block"]), list(s["order"]))
    elif p == "add_unit_loop":
        sch.add_unit_loop(c.block(s["block"]) if s["loop"] is None
                          else c.loop(s["block"], s["loop"]))
    elif p == "decompose_padding":
        sch.decompose_padding(c.block(s["block"]), c.loop(s["block"], s["loop"]))
    elif p == "fuse_reduction_epilogue":
        sch.fuse_reduction_epilogue(c.block(s["block"]), c.block(s["target"]))
    else:
        raise ValueError(f"unknown schedule primitive {p!r}")


def _apply_step(fmod, step: dict, sch=None):
    """``fmod`` (a one-function module) with ``step`` applied; StepRefused when it does not
    apply. Other exceptions propagate: they are finding candidates. ``sch``: a fresh, unused
    schedule of ``fmod`` to apply it with."""
    tvm, s_tir = _tvm()
    sch = sch if sch is not None else _new_schedule(fmod, step["func"])
    breadcrumb.mark(step=step)
    try:
        _do(_Ctx(sch, step), step)
    except s_tir.ScheduleError as e:
        # Refused: the step is over. Left as the breadcrumb, a later death (the next step's
        # sampling, a pass after the schedule) would be blamed on it.
        breadcrumb.mark(step=None)
        raise StepRefused(step, _first_line(str(e))) from e
    except StepRefused:
        breadcrumb.mark(step=None)
        raise
    new = sch.mod
    # A primitive that leaves ill-formed TIR (a variable defined twice, ...) is the finding,
    # not the next step, whose Schedule constructor would be the first to notice.
    _verify(new)
    breadcrumb.mark(step=None)
    return new


def _verify(mod) -> None:
    """Raise when ``mod`` is ill-formed: s_tir's verifier knows blocks (0.27); 0.25 and 0.26
    have only tirx's, which accepts blocks there."""
    import tvm

    analysis = getattr(getattr(tvm, "s_tir", None), "analysis", None)
    fn = getattr(analysis, "verify_well_formed", None) or tvm.tirx.analysis.verify_well_formed
    fn(mod, assert_mode=True)


def _first_line(msg: str) -> str:
    line = msg.strip().splitlines()[0] if msg.strip() else ""
    return line.removeprefix("ScheduleError: ").strip()[:200]


# The step that raised last and the steps before it, for exceptions that take no attributes
# (TVM's own error classes); see failed_step.
_LAST_FAILURE: list = [None, []]


def _attach(e: BaseException, step: dict, applied: list[dict]) -> None:
    _LAST_FAILURE[:] = [step, list(applied)]
    try:
        e.schedule_step = step
        e.schedule_applied = list(applied)
        e.add_note(f"tvmfuzz schedule step: {json.dumps(step)}")
    except Exception:  # noqa: BLE001  (an exception type that takes no attributes)
        pass


def failed_step(e: BaseException) -> tuple:
    """(the step that raised ``e``, the steps applied before it); (None, []) when unknown."""
    step = getattr(e, "schedule_step", None)
    if step is not None:
        return step, list(getattr(e, "schedule_applied", []))
    return _LAST_FAILURE[0], list(_LAST_FAILURE[1])


def _split(mod) -> dict:
    tvm, _ = _tvm()
    return {name: tvm.IRModule({mod.get_global_var(name): mod[name]})
            for name in schedulable_funcs(mod)}


def _join(mod, parts: dict):
    out = mod.clone()
    for name, fmod in parts.items():
        gv = mod.get_global_var(name)
        out.update_func(gv, fmod[fmod.get_global_var(name)])
    return out


def random_schedule(mod, rng: random.Random, steps: int = 6, target_kind: str = "llvm",
                    stats: Optional[ScheduleStats] = None,
                    primitives: Optional[dict[str, int]] = None):
    """Try ``steps`` random primitives on each schedulable PrimFunc of ``mod`` (Relax functions
    are left alone). Returns ``(new_mod, applied)``: the module and the steps that applied, in
    order (refused ones are counted in ``stats`` and dropped). ``mod`` is not modified."""
    prims = primitives_for(target_kind, primitives)
    names, weights = list(prims), list(prims.values())
    stats = stats if stats is not None else ScheduleStats()
    parts = _split(mod)
    applied: list[dict] = []
    if not prims:
        return _join(mod, parts), applied
    for func, fmod in parts.items():
        for _ in range(steps):
            prim = rng.choices(names, weights)[0]
            sch = _new_schedule(fmod, func)
            all_blocks = block_names(sch)
            blocks = [b for b in dict.fromkeys(all_blocks) if all_blocks.count(b) == 1]
            if not blocks:
                stats.skipped[prim] += 1
                continue
            step = _GENERATORS[prim](sch, rng, blocks, target_kind)
            if step is None:
                stats.skipped[prim] += 1
                continue
            step = {"func": func, **step}
            stats.tried[prim] += 1
            try:
                fmod = _apply_step(fmod, step, sch)
            except StepRefused as e:
                stats.refused[prim] += 1
                stats.reasons[(prim, e.reason)] += 1
                continue
            except BaseException as e:
                _attach(e, step, applied)
                raise
            stats.applied[prim] += 1
            applied.append(step)
            breadcrumb.mark(steps=list(applied))
        parts[func] = fmod
    return _join(mod, parts), applied


def apply_schedule(mod, applied: list[dict]):
    """Replay ``applied`` on ``mod``, step by step, exactly as ``random_schedule`` did. A step
    that does not apply any more raises ``StepRefused``; other exceptions propagate with the
    step attached."""
    parts = _split(mod)
    done: list[dict] = []
    for step in applied:
        func = step["func"]
        if func not in parts:
            raise StepRefused(step, f"no schedulable function {func!r}")
        try:
            parts[func] = _apply_step(parts[func], step)
        except StepRefused:
            raise
        except BaseException as e:
            _attach(e, step, done)
            raise
        done.append(step)
        breadcrumb.mark(steps=list(done))
    return _join(mod, parts)


# --- TVM 0.27 defects met by random schedules: KNOWN_BUGS, in fuzz/tir/schedule_bugs.py (data,
# so that the triage of findings, in the bottom layer, can name them)
# "blame": the primitive left out of the stable set for it: the one that misbehaves, or, where
# a core primitive goes wrong only on what a rarer one set up, the rarer one (transform_layout
# for compute_at, blockize for reverse_compute_inline, fuse for reorder, add_unit_loop for
# decompose_reduction).
BUGGY_PRIMITIVES = frozenset(b["blame"] for b in KNOWN_BUGS)
STABLE_PRIMITIVES = {p: w for p, w in PRIMITIVES.items() if p not in BUGGY_PRIMITIVES}


def vectorized_alloc(mod) -> bool:
    """Whether a vectorized loop of ``mod``'s PrimFuncs holds a buffer allocation (a block's
    ``T.sblock_alloc_buffer``, ``T.alloc_buffer``, ``T.decl_buffer``) or a local scalar: the
    defect where every lane shares one buffer (``fuzz.tir.build.LOCAL_SCALAR_VECTORIZED``).
    Read from the printed TIR (TVM has no Python TIR visitor on 0.27): a vectorized loop's
    body is the lines indented under it."""
    tvm, _ = _tvm()
    for f in mod.functions.values():
        if not isinstance(f, tvm.tirx.PrimFunc):
            continue
        under = None   # indentation of the vectorized loop being read, if any
        for line in f.script().splitlines():
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            if under is not None and indent <= under:
                under = None
            if under is not None and re.search(
                    r"alloc_buffer\(|T\.decl_buffer\(|: T\.\w+ = ", line):
                return True
            if under is None and re.match(r"\s*for .* in T\.vectorized\(", line):
                under = indent
    return False


def guilty_step(steps: list[dict], wrong: Callable[[int], bool],
                check_end: bool = True) -> Optional[dict]:
    """The step whose prefix of ``steps`` first gives a wrong result: ``wrong(k)`` builds and
    runs with the first ``k`` steps and says whether the result is wrong (binary search: a few
    builds, only for a finding). None when the unscheduled build is already wrong, or (with
    ``check_end``) when even all the steps replayed give the right result."""
    lo, hi = 0, len(steps)
    if wrong(lo) or (check_end and not wrong(hi)):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wrong(mid):
            hi = mid
        else:
            lo = mid
    return steps[hi - 1]
