"""Random TIR pass orders, as replayable data, run before ``tvm.tirx.build``.

A pass order is a list of names (``"s_tir.LowerInitBlock"``, ``"tirx.NarrowDataType(32)"``,
``"s_tir.ThreadSync(shared)"``): a namespace (``tirx`` = ``tvm.tirx.transform``, ``s_tir`` =
``tvm.s_tir.transform``; without one, tirx is tried first), a pass constructor and optional
literal arguments. A variant's order is completed by ``full_order``: the default pipeline's
passes after the furthest one the order reached, then the host/device split and the packed API
(what ``tvm.tirx.build``'s pipeline ends with); ``apply_passes`` binds the target and runs that
on the module, and ``finish_build`` generates code with only the build's finalization. The
module is lowered once, as TVM's own pipeline lowers it: running the whole default pipeline
again on lowered IR (what tvmfuzz once did) made s_tir passes meet flat IR no pipeline gives
them, and their crashes were tvmfuzz's misuse, not TVM bugs.

``random_pass_order`` follows 0.27's default CPU pipeline (``tvm.s_tir.pipeline
.default_s_tir_pipeline``, the one ``tvm.tirx.build`` picks for llvm): it cuts the pipeline at
a random point, keeps the relative order of the passes, drops optional ones (never one that a
later kept pass needs: the phase changes below), repeats idempotent ones and inserts extra ones
where their preconditions hold. The host/device split and everything after it
(SplitHostDevice, MakePackedAPI, the storage legalizers, LowerTVMBuiltin, LowerIntrin) stay in
the build: running them twice is an error by design.

``is_phase_ordering_noise`` recognises the errors that orders ignoring those preconditions
produce (``PHASE_ORDERING_NOISE``): how they were found and counted is in that list's comment.
"""
from __future__ import annotations

import ast
import random
import re
from typing import Optional

# The default s_tir pipeline for llvm, in order, up to the host/device split (the passes that
# the 0.27 pipeline only adds under a config flag are left out: LowerAsyncDMA,
# InstrumentBoundCheckers, InjectPTXLDG32, InstrumentProfileIntrinsics, InjectPTXAsyncCopy).
DEFAULT_ORDER = (
    "s_tir.CanonicalizeLoop", "s_tir.LowerCrossThreadReduction", "s_tir.LowerInitBlock",
    "s_tir.PlanAndUpdateBufferAllocationLocation", "s_tir.ConvertBlocksToOpaque",
    "s_tir.LiftThreadBinding", "s_tir.ManifestSharedMemoryLocalStage",
    "s_tir.CompactBufferAllocation", "s_tir.LowerAutoCopy", "s_tir.UnifyThreadBinding",
    "s_tir.LowerMatchBuffer", "s_tir.StmtSimplify", "s_tir.InjectPermutedLayout",
    "s_tir.AnnotateIrregularLoop", "s_tir.InjectSoftwarePipeline",
    "s_tir.TransformMmaBufferLayout", "s_tir.LowerOpaqueBlock",
    # -- flat: no blocks from here on
    "tirx.FlattenBuffer", "tirx.BF16ComputeLegalize", "tirx.NarrowDataType(32)",
    "s_tir.LoopPartition", "tirx.VectorizeLoop", "s_tir.InjectVirtualThread",
    "s_tir.InjectDoubleBuffer", "tirx.StorageRewrite", "s_tir.HoistIfThenElse",
    "tirx.UnrollLoop", "s_tir.RenormalizeSplitPattern", "tirx.StmtSimplify", "tirx.RemoveNoOp",
    "s_tir.RewriteUnsafeSelect", "tirx.CommonSubexprElim", "tirx.FP8ComputeLegalize",
    "s_tir.VerifyVTCMLimit", "s_tir.LowerVtcmAlloc", "tirx.VerifyMemory",
    "tirx.AnnotateEntryFunc", "s_tir.ThreadSync(shared)", "s_tir.ThreadSync(shared.dyn)",
    "s_tir.ThreadSync(warp)", "s_tir.InferFragment", "s_tir.LowerThreadAllreduce",
    "s_tir.MergeSharedMemoryAllocations",
)
# What tvm.tirx.build runs after the pipeline; not part of random orders (see the docstring),
# but part of the truly random orders of the noise experiment.
BUILD_TAIL = (
    "tirx.SplitHostDevice", "tirx.MakePackedAPI", "tirx.FP8StorageLegalize",
    "tirx.BF16StorageLegalize", "tirx.LowerTVMBuiltin", "tirx.LowerIntrin",
)
# Phase changes: a kept pass after one of these needs it (and the ones before it) to have run.
# LowerInitBlock/ConvertBlocksToOpaque/LowerOpaqueBlock turn blocks into plain statements,
# which FlattenBuffer and every later pass require ("Non-opaque blocks are not allowed in
# FlattenBuffer"); FlattenBuffer makes buffers 1-d, which VectorizeLoop, StorageRewrite and
# codegen require; LowerMatchBuffer removes match_buffer, which LowerOpaqueBlock requires.
ESSENTIAL = ("s_tir.LowerInitBlock", "s_tir.ConvertBlocksToOpaque", "s_tir.LowerMatchBuffer",
             "s_tir.LowerOpaqueBlock", "tirx.FlattenBuffer")
FLAT_START = DEFAULT_ORDER.index("tirx.FlattenBuffer")
BLOCKS_END = DEFAULT_ORDER.index("s_tir.LowerOpaqueBlock")
# Safe to run any number of times in a row or again later.
REPEATABLE = ("s_tir.StmtSimplify", "tirx.StmtSimplify", "tirx.RemoveNoOp",
              "tirx.CommonSubexprElim", "tirx.NarrowDataType(32)", "s_tir.RenormalizeSplitPattern",
              "s_tir.RewriteUnsafeSelect", "tirx.ConvertSSA", "s_tir.CanonicalizeLoop")
# Extra passes and where their preconditions hold: (after, before): a pass the extra must come
# after (it must be in the order: else the extra is not inserted) and one it must come before
# (when in the order). FLAT = after FlattenBuffer; BLOCKS = while blocks exist.
_FLAT = ("tirx.FlattenBuffer", None)
_BLOCKS = (None, "s_tir.LowerOpaqueBlock")
OPTIONAL = {
    "tirx.StmtSimplify": _FLAT, "s_tir.StmtSimplify": (None, None), "tirx.RemoveNoOp": _FLAT,
    "tirx.ConvertSSA": (None, None), "tirx.UnrollLoop": _FLAT, "tirx.VectorizeLoop": _FLAT,
    "tirx.VectorizeLoop(False)": _FLAT, "s_tir.LoopPartition": _FLAT,
    "s_tir.HoistIfThenElse": _FLAT, "tirx.CommonSubexprElim": _FLAT,
    "s_tir.HoistExpression": _FLAT, "s_tir.RemoveStoreUndef": _FLAT,
    "s_tir.UseAssumeToReduceBranches": _FLAT, "tirx.RemoveAssume": _FLAT,
    "s_tir.RenormalizeSplitPattern": _FLAT, "tirx.StorageRewrite": _FLAT,
    "s_tir.InstrumentBoundCheckers": _FLAT,
    "tirx.BF16ComputeLegalize": _FLAT, "tirx.FP8ComputeLegalize": _FLAT,
    "tirx.NarrowDataType(32)": _FLAT, "s_tir.CanonicalizeLoop": _BLOCKS,
    # "(!op->init.has_value()) is false": blocks with T.init need LowerInitBlock first
    "s_tir.PlanAndUpdateBufferAllocationLocation": ("s_tir.LowerInitBlock",
                                                    "s_tir.LowerOpaqueBlock"),
    # "CompactBufferRegion only works on opaque blocks"
    "s_tir.CompactBufferAllocation": ("s_tir.ConvertBlocksToOpaque", "s_tir.LowerOpaqueBlock"),
    "s_tir.InjectSoftwarePipeline": ("s_tir.ConvertBlocksToOpaque", "s_tir.LowerOpaqueBlock"),
}
# Not drawn: tirx.PointerValueTypeRewrite vectorizes the pointer types of the function's own
# parameters (p: float32 becomes float32x2), which TVM's pipelines only do to device kernels
# behind a host function; on the entry function it changes the calling convention, so the
# call then fails its argument checks: tvmfuzz's misuse, seen as a false "run" crash.
# Every pass the experiments draw from (truly random orders): the pipeline, the build's tail,
# the extras, and the rest of both namespaces that a CPU module can meet.
ALL_PASSES = tuple(dict.fromkeys(DEFAULT_ORDER + BUILD_TAIL + tuple(OPTIONAL) + (
    "tirx.LowerWarpMemory", "tirx.ForceNarrowIndexToInt32", "tirx.SkipAssert",
    "tirx.InlinePrivateFunctions", "s_tir.ConvertSSA", "s_tir.DecorateDeviceScope",
    "s_tir.LowerAsyncDMA", "s_tir.InjectPTXAsyncCopy", "s_tir.InjectPTXLDG32",
    "s_tir.InstrumentProfileIntrinsics", "s_tir.RemoveWeightLayoutRewriteBlock",
    "tirx.PointerValueTypeRewrite",
)))

_NAME = re.compile(r"^(?:(tirx|s_tir)\.)?([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$")
ALIASES = {"Simplify": "tirx.StmtSimplify"}


def _literal(text: str):
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text          # ThreadSync(shared.dyn): a bare word is a string


class PassMissing(ValueError):
    """This TVM release has no such pass (orders are drawn from 0.27's pipeline)."""


def available(names: list[str]) -> tuple[list[str], list[str]]:
    """(the passes of ``names`` this release has, the ones it lacks)."""
    have, missing = [], []
    for n in names:
        try:
            resolve_pass(n)
            have.append(n)
        except PassMissing:
            missing.append(n)
    return have, missing


def resolve_pass(name: str):
    """The ``tvm.transform.Pass`` a name stands for: ``[tirx.|s_tir.]Ctor[(arg, ...)]``."""
    import tvm
    from tvm import s_tir, tirx

    m = _NAME.match(ALIASES.get(name, name).strip())
    if not m:
        raise ValueError(f"not a pass name: {name!r}")
    ns, ctor, args = m.groups()
    # The named namespace first, then the other: passes moved between them across releases
    # (0.25 has StmtSimplify only in tirx).
    spaces = {"tirx": [tirx.transform, s_tir.transform],
              "s_tir": [s_tir.transform, tirx.transform]}.get(
        ns, [tirx.transform, s_tir.transform])
    for space in spaces:
        f = getattr(space, ctor, None)
        if f is not None:
            break
    else:
        raise PassMissing(f"no pass {name!r} in tvm.tirx.transform / tvm.s_tir.transform")
    argv = [_literal(a) for a in args.split(",")] if args and args.strip() else []
    p = f(*argv)
    if not isinstance(p, tvm.transform.Pass):
        raise ValueError(f"{name!r} is not a pass")
    return p


def random_pass_order(rng: random.Random, p_drop: float = 0.25, p_repeat: float = 0.15,
                      n_extra: Optional[int] = None) -> list[str]:
    """A random order derived from DEFAULT_ORDER (see the module docstring)."""
    # Cut: stop inside the block phase, inside the flat phase, or run the whole pipeline.
    r = rng.random()
    if r < 0.25:
        cut = rng.randint(1, BLOCKS_END + 1)
    elif r < 0.6:
        cut = rng.randint(FLAT_START + 1, len(DEFAULT_ORDER))
    else:
        cut = len(DEFAULT_ORDER)
    prefix = list(DEFAULT_ORDER[:cut])
    # Phase changes (ESSENTIAL) in the prefix stay: what follows them needs them.
    order: list[str] = []
    for name in prefix:
        if name in ESSENTIAL or rng.random() >= p_drop:
            order.append(name)
        if name in REPEATABLE and rng.random() < p_repeat:
            order.append(name)
    k = rng.randint(0, 4) if n_extra is None else n_extra
    for _ in range(k):
        name = rng.choice(sorted(OPTIONAL))
        after, before = OPTIONAL[name]
        if after is not None and after not in order:
            continue
        lo = order.index(after) + 1 if after is not None else 0
        hi = order.index(before) if before is not None and before in order else len(order)
        if lo > hi:
            continue
        order.insert(rng.randint(lo, hi), name)
    return order


def apply_passes(mod, names: list[str], target="llvm"):
    """``mod`` (PrimFuncs; Relax functions are passed through) with the target bound and
    ``names`` applied in order. Exceptions propagate: the caller judges them with
    ``is_phase_ordering_noise``."""
    import tvm

    target = tvm.target.Target(target)
    # as tvm.tirx.build binds it: with a host (the target itself for CPUs, else llvm)
    host = target.host or (target if target.kind.name in ("llvm", "c") else "llvm")
    mod = tvm.tirx.transform.BindTarget(target.with_host(host))(mod)
    for name in names:
        mod = resolve_pass(name)(mod)
    return mod


def full_order(names: list[str]) -> list[str]:
    """``names`` and what the build runs after it: the default pipeline's passes after the
    furthest one ``names`` reached (a cut order goes on where it stopped; a pass it dropped
    before that point stays dropped), then the host/device split and the packed API. Empty
    for an empty order (the variant builds with ``tvm.tirx.build`` as it is)."""
    if not names:
        return []
    reached = [DEFAULT_ORDER.index(n) for n in names if n in DEFAULT_ORDER]
    cut = max(reached) + 1 if reached else 0
    return list(names) + list(DEFAULT_ORDER[cut:]) + list(BUILD_TAIL[:4])


def finish_build(mod, target):
    """``tvm.tirx.build`` of a module its pass order lowered already (through MakePackedAPI):
    only the build's finalization (LowerTVMBuiltin, LowerIntrin) and code generation run, not
    the lowering pipeline a second time. repro.py embeds this function as it is."""
    import tvm

    try:
        from tvm.s_tir import pipeline as s_tir_pipeline
        from tvm.tirx import compilation_pipeline
    except ImportError:   # a release without named pipelines: its build lowers again
        return tvm.tirx.build(mod, target=target)
    compilation_pipeline.PIPELINE_MAP.setdefault("tvmfuzz-lowered", lambda: (
        tvm.transform.Sequential([]), s_tir_pipeline.finalize_host_passes,
        s_tir_pipeline.finalize_device_passes))
    return tvm.tirx.build(mod, target=target, pipeline="tvmfuzz-lowered")


def build(mod, names: list[str], target="llvm"):
    """``mod`` built as a pass-order variant builds it: ``full_order(names)`` applied, then
    ``finish_build``."""
    if not names:
        import tvm

        return tvm.tirx.build(mod, target=target)
    return finish_build(apply_passes(mod, full_order(names), target), target)


# --- errors that a pass order without its preconditions produces ---------------------------------
def _runs_before(order: list[str], passes: tuple, needed: str) -> bool:
    """Some pass of ``passes`` runs in ``order`` before ``needed`` has run."""
    seen = False
    for name in order:
        if name == needed:
            seen = True
        elif name in passes and not seen:
            return True
    return False


_UNBOUND = "target not bound (apply_passes and tvm.tirx.build bind it)"
# One entry per precondition: (regex on the first line of the message, the passes that raise
# it, the precondition, ``violated(order)``: does the order break it?). Established by running
# 800 truly random orders (1-12 passes drawn from ALL_PASSES, 15% of them without BindTarget)
# on the standard PrimFuncs (the hand-written matmul, four stable random schedules of it, and
# LegalizeOps' PrimFuncs for relax.matmul, relax.add, relax.sum); the count is how many of the
# 800 failed that way: 401 while applying the order, 2 in tvm.tirx.build, every one matched
# here and, given its order, breaking the precondition named; 358 built and computed the right
# values; 39 died by SIGSEGV in NarrowDataType run on block IR (no message to match: a TVM
# robustness bug, not noise).
PHASE_ORDERING_NOISE = (
    # 100: FP8StorageLegalize, BF16StorageLegalize check that parameters are no longer buffers,
    # i.e. that MakePackedAPI ran (the build runs them right after it).
    (r"This pass must be called after MakePackedAPI",
     ("tirx.FP8StorageLegalize", "tirx.BF16StorageLegalize"), "after MakePackedAPI",
     lambda o: any(p in o for p in ("tirx.FP8StorageLegalize", "tirx.BF16StorageLegalize"))),
    # 78: ConvertBlocksToOpaque, PlanAndUpdateBufferAllocationLocation, CompactBufferAllocation
    # ICHECK that no block has a T.init any more, i.e. that LowerInitBlock ran.
    (r"\((?:!block_op|!op)->init\.has_value\(\)\) is false",
     ("s_tir.ConvertBlocksToOpaque", "s_tir.PlanAndUpdateBufferAllocationLocation",
      "s_tir.CompactBufferAllocation"), "after LowerInitBlock",
     lambda o: _runs_before(o, ("s_tir.ConvertBlocksToOpaque",
                                "s_tir.PlanAndUpdateBufferAllocationLocation",
                                "s_tir.CompactBufferAllocation"), "s_tir.LowerInitBlock")),
    # 65: StorageRewrite and PointerValueTypeRewrite meet a buffer access before any
    # AllocBuffer/DeclBuffer: buffers are still block-allocated (sblock_alloc_buffer), i.e.
    # LowerOpaqueBlock has not run.
    (r"Load/Store of buffer \S+ \(0x[0-9a-fA-F]+\) occurred before its declaration",
     ("tirx.StorageRewrite", "tirx.PointerValueTypeRewrite"), "after LowerOpaqueBlock",
     lambda o: _runs_before(o, ("tirx.StorageRewrite", "tirx.PointerValueTypeRewrite"),
                            "s_tir.LowerOpaqueBlock")),
    # StorageRewrite (LiftStorageAlloc) meets a vectorized loop VectorizeLoop has not lowered
    # yet: the default order runs VectorizeLoop first, the check says so.
    (r"VectorizeLoop before LiftStorageAll",
     ("tirx.StorageRewrite",), "after VectorizeLoop",
     lambda o: _runs_before(o, ("tirx.StorageRewrite",), "tirx.VectorizeLoop")),
    # LLVM's code generator meets a vectorized loop: the order dropped VectorizeLoop (and
    # StorageRewrite, which would have said so first), which lowers or serializes them.
    (r"cannot handle for type vectorized", ("codegen",), "after VectorizeLoop",
     lambda o: not any(p.startswith("tirx.VectorizeLoop") for p in o)),
    # 50: MakePackedAPI finds free variables (block iter vars, loop vars of blocks): blocks are
    # not lowered when it runs, either because it ran before LowerOpaqueBlock or because
    # SplitHostDevice ran on block IR, moving the blocks into a device function the build's
    # lowering does not reach (2 of them in tvm.tirx.build).
    (r"are used, but are not passed in as API arguments",
     ("tirx.MakePackedAPI",), "after LowerOpaqueBlock, SplitHostDevice too",
     lambda o: _runs_before(o, ("tirx.MakePackedAPI", "tirx.SplitHostDevice"),
                            "s_tir.LowerOpaqueBlock")),
    # 41: LowerOpaqueBlock (the message names FlattenBuffer, its old home) meets a block with
    # iter values: ConvertBlocksToOpaque has not run.
    (r"Non-opaque blocks are not allowed in FlattenBuffer",
     ("s_tir.LowerOpaqueBlock", "tirx.FlattenBuffer"), "after ConvertBlocksToOpaque",
     lambda o: _runs_before(o, ("s_tir.LowerOpaqueBlock", "tirx.FlattenBuffer"),
                            "s_tir.ConvertBlocksToOpaque")),
    # 27: LowerIntrin, LowerThreadAllreduce, LowerWarpMemory, SplitHostDevice read the
    # function's target attribute: BindTarget has not run.
    (r"Require the target attribute",
     ("tirx.LowerIntrin", "s_tir.LowerThreadAllreduce", "tirx.LowerWarpMemory",
      "tirx.SplitHostDevice"), _UNBOUND, lambda o: True),
    # 27: FlattenBuffer meets a buffer with no AllocBuffer/DeclBuffer: block-allocated still,
    # LowerOpaqueBlock has not run.
    (r"is used before its definition \(AllocBuffer/DeclBuffer/PrimFunc param\)",
     ("tirx.FlattenBuffer",), "after LowerOpaqueBlock",
     lambda o: _runs_before(o, ("tirx.FlattenBuffer",), "s_tir.LowerOpaqueBlock")),
    # 11: CompactBufferAllocation works on opaque blocks only: ConvertBlocksToOpaque first.
    (r"CompactBufferRegion only works on opaque blocks",
     ("s_tir.CompactBufferAllocation",), "after ConvertBlocksToOpaque",
     lambda o: _runs_before(o, ("s_tir.CompactBufferAllocation",),
                            "s_tir.ConvertBlocksToOpaque")),
    # 4: MakePackedAPI reads the target attribute: BindTarget has not run.
    (r"MakePackedAPI required the function to be annotated with tvm::attr::kTarget",
     ("tirx.MakePackedAPI",), _UNBOUND, lambda o: True),
)


def is_phase_ordering_noise(message: str, order: Optional[list[str]] = None) -> bool:
    """The error is what a pass says when an earlier pass it needs has not run (or a pass that
    belongs after the host/device split ran before it): no TVM bug. With ``order`` (the pass
    order that was applied), a known message only counts as noise when the order really breaks
    the precondition: the same message after an order that keeps it is a finding."""
    text = (message or "").strip()
    if not text:
        return False
    first = text.splitlines()[0]
    for pattern, _, _, violated in PHASE_ORDERING_NOISE:
        if re.search(pattern, first):
            return order is None or bool(violated(list(order)))
    return False
