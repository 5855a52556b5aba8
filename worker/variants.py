"""Compile variants: how a case is built and run, recorded with each finding.

A variant is plain data (it travels in case JSON): a target as 0.27 takes it (a dict), a Relax
pipeline, an optional random sequence of ``relax.transform`` passes (some real bugs need one
exact pass order, so the order is part of the test input), and the VM exec mode.

Pipelines:
* ``default``  ``relax.build``'s default (legalize and lower, no fusion);
* ``target``   the target's default pipeline (library dispatch, legalize, fusion; for CUDA it
               applies dlight schedules: without it TVM silently emits host code for CUDA);
* ``zero``     LegalizeOps, AnnotateTIROpPattern, FoldConstant, FuseOps, FuseTIR, then default;
* ``passes``   the recorded pass sequence, then default;
* ``dlight``   a GPU target's default pipeline with dlight's rules given by the variant
               (``dlight``: one rule and Fallback, or the default list), compile-only where
               no device runs it: a rule that throws where it should decline, or a kernel the
               target's codegen refuses, is a finding.
"""
from __future__ import annotations

import functools
import shutil
from dataclasses import asdict, dataclass, field
from typing import Optional

from fuzz.choice import Chooser

# The pass zoo: every relax.transform pass that can be constructed without external inputs
# and keeps the entry function's signature and meaning. A pass is named by a string:
# "Name", or "Name:ARG" for one TVM needs arguments for, which ``make_pass`` turns into them
# (the arguments are part of the case, so the reducer and repro.py rebuild the same pass):
#   ToMixedPrecision:DTYPE          out_dtype float32 or float16
#   ConvertLayout:LAYOUT            conv2d, conv2d_transpose, resize2d to NHWC (kernel OHWI) or
#                                   NCHW (pools follow: they take no desired layout)
#   TopologicalSort:ORDER,DIRECTION depth-first|breadth-first, from-inputs|from-outputs
#   FuseOpsByPattern:P;P[|nobind]   generated dpl patterns, P = OP or OP>OP (the second takes
#                                   the first as its first argument); OP@c has a constant
#                                   second argument; |nobind: bind_constants=False
# Left out (each needs what a generated case cannot supply): AlterOpImpl, SplitCallTIRByPattern
# (a PrimFunc per op), BindParams, BindSymbolicVars, UpdateParamType, UpdateVDevice (values or
# a device to bind), Gradient (a scalar loss), LiftTransformParams, BundleModelParams and the
# Lazy* passes (they change main's parameters: the case's inputs no longer fit), RunCodegen,
# MergeCompositeFunctions, AttachExternModules (an external codegen), MetaSchedule* (a tuning
# database), IPCAllReduceRewrite, LowerGPUIPCAllocStorage (several GPUs). The lowering passes
# (CallTIRRewrite, StaticPlanBlockMemory, KillAfterLastUse, LowerAllocTensor, VMShapeLower, ...)
# run in every build through relax.build's default pipeline, after the sequence.
RELAX_PASSES = (
    "FoldConstant", "CanonicalizeBindings", "EliminateCommonSubexpr", "DeadCodeElimination",
    "ConvertToDataflow", "LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR",
    "ToMixedPrecision", "CombineParallelMatmul", "DecomposeOpsForInference",
    "RewriteDataflowReshape", "LambdaLift", "Normalize",
    "ExpandTupleArguments", "RemoveUnusedParameters", "RemoveUnusedOutputs", "InlinePrivateFunctions",
    "AdjustMatmulOrder", "ExpandMatmulOfSum", "ReorderPermuteDimsAfterConcat",
    "ReorderTakeAfterMatmul", "FuseTransposeMatmul", "FoldBatchnormToConv2D",
    "RemoveRedundantReshape", "OptimizeLayoutTransform", "FastMathTransform",
    "DecomposeOpsForTraining", "ToNonDataflow", "DataflowUseInplaceCalls",
    "SpecializePrimFuncBasedOnCallSite", "AttachAttrLayoutFreeBuffers",
    "SplitLayoutRewritePreproc", "RealizeVDevice", "AllocateWorkspace", "NormalizeGlobalVar",
    "TopologicalSort", "ConvertLayout", "FuseOpsByPattern",
)
# Passes that change numerics by design: a variant with one is judged for crashes only.
INEXACT_PASSES = {"ToMixedPrecision", "FastMathTransform"}
# Pass orders that only work after others: LegalizeOps must come before the TIR-pattern passes
# and those that read PrimFuncs (they state it: "requires legalized ops" / call_tir callees).
_NEEDS_BEFORE = {"AnnotateTIROpPattern": "LegalizeOps", "FuseOps": "AnnotateTIROpPattern",
                 "FuseTIR": "FuseOps", "SpecializePrimFuncBasedOnCallSite": "LegalizeOps",
                 "AttachAttrLayoutFreeBuffers": "LegalizeOps",
                 "SplitLayoutRewritePreproc": "AttachAttrLayoutFreeBuffers",
                 "DataflowUseInplaceCalls": "LegalizeOps"}
LAYOUTS = ("NHWC", "NCHW")
SORT_ORDERS = ("depth-first", "breadth-first")
SORT_DIRECTIONS = ("from-inputs", "from-outputs")
# Ops the generated fusion patterns name: those random programs use most (a pattern over an
# op no program has fuses nothing), and those with a constant operand after FoldConstant.
PATTERN_OPS = ("relax.add", "relax.multiply", "relax.subtract", "relax.nn.relu", "relax.exp",
               "relax.matmul", "relax.nn.conv2d", "relax.reshape", "relax.permute_dims",
               "relax.sum", "relax.astype", "relax.maximum", "relax.divide", "relax.sigmoid",
               "relax.nn.softmax", "relax.strided_slice", "relax.concat", "relax.where")


def pass_name(spec: str) -> str:
    """The TVM pass a zoo entry names ("FuseOpsByPattern:relax.add" -> "FuseOpsByPattern")."""
    return spec.split(":", 1)[0]


def pass_problem(spec) -> Optional[str]:
    """Why a pass entry from outside is not one tvmfuzz makes, or None."""
    import re

    if not isinstance(spec, str) or len(spec) > 400:
        return "not a pass name"
    name, _, arg = spec.partition(":")
    if name not in RELAX_PASSES:
        return f"{name[:60]!r} is not on tvmfuzz's list"
    if not arg:
        return None
    if name == "ToMixedPrecision" and arg in ("float32", "float16"):
        return None
    if name == "ConvertLayout" and arg in LAYOUTS:
        return None
    if name == "TopologicalSort" and arg.count(",") == 1 and \
            arg.split(",")[0] in SORT_ORDERS and arg.split(",")[1] in SORT_DIRECTIONS:
        return None
    op = r"relax\.[a-z0-9_]+(\.[a-z0-9_]+)*(@c)?"
    if name == "FuseOpsByPattern" and re.fullmatch(
            rf"{op}(>{op})?(;{op}(>{op})?)*(\|nobind)?", arg):
        return None
    return f"{spec[:80]!r} has arguments tvmfuzz does not make"


def random_pass(ch: Chooser, ops: tuple = (), p: str = "") -> str:
    """One zoo entry, its arguments drawn. ``ops``: the case program's ops as pattern
    operands (``OP`` or ``OP@c``), which fusion patterns draw from more often than not.
    ``p``: this pass, its arguments drawn (default: a pass drawn from the zoo)."""
    p = p or ch.choice(RELAX_PASSES)
    if p == "ToMixedPrecision":
        return p + ":" + ch.choice(("float32", "float16")) if ch.boolean(0.5) else p
    if p == "ConvertLayout":
        return p + ":" + ch.choice(LAYOUTS)
    if p == "TopologicalSort":
        return f"{p}:{ch.choice(SORT_ORDERS)},{ch.choice(SORT_DIRECTIONS)}"
    if p == "FuseOpsByPattern":
        pats = []
        for _ in range(ch.integer(1, 3)):
            if ops and ch.boolean(0.6):   # a pattern that matches something in the program
                bound = [o for o in ops if o.endswith("@c")]   # half the time one with a
                pats.append(ch.choice(bound if bound and ch.boolean(0.5) else ops))  # constant
                continue
            chain = [ch.choice(PATTERN_OPS) + ("@c" if ch.boolean(0.3) else "")
                     for _ in range(ch.integer(1, 2))]
            pats.append(">".join(chain))
        return p + ":" + ";".join(pats) + ("|nobind" if ch.boolean(0.25) else "")
    return p


# GPU targets that build on a machine without their device or toolchain (0.27; compile-only
# unless a CUDA GPU is present). Metal builds too, but its first build in a process takes
# ~40 s (toolchain lookup), too slow for a campaign's children; vulkan, rocm and nvptx need
# toolchains TVM's wheel or this machine lacks.
GPU_KINDS = ("cuda", "opencl", "webgpu")
# dlight's GPU rules, in the order ApplyDefaultSchedule tries them (Fallback last).
DLIGHT_RULES = ("Matmul", "GEMV", "LowBatchGEMV", "Reduction", "GeneralReduction", "Transpose",
                "RMSNorm", "Fallback")
# Archs current nvcc releases all compile for (CUDA 13 dropped everything before sm_75).
CUDA_ARCHS = ("sm_75", "sm_80", "sm_89", "sm_90")
GPU_THREADS = {"cuda": (128, 256, 512, 1024), "opencl": (64, 128, 256),
               "webgpu": (64, 128, 256)}

LLVM_CPUS = ("", "x86-64", "haswell", "skylake-avx512", "znver3")
# /proc/cpuinfo flags code for an -mcpu needs before it can run here; code for a CPU this host
# lacks dies by SIGILL, which is no TVM bug, so such variants are compile-only.
_CPU_NEEDS = {"": (), "x86-64": (), "haswell": ("avx2", "fma", "bmi2"),
              "skylake-avx512": ("avx512f", "avx512bw", "avx512dq", "avx512vl"),
              "znver3": ("avx2", "sse4a", "clzero")}


@dataclass
class Variant:
    target: dict = field(default_factory=lambda: {"kind": "llvm"})
    pipeline: str = "default"
    passes: list = field(default_factory=list)
    exec_mode: str = "bytecode"
    # "module:attr" names of extra Relax passes run first (a TVM fork's own passes, or a
    # test's planted bug); imported in the sandbox child, from the user's own command line.
    extra_passes: list = field(default_factory=list)
    # pipeline "scheduled": LegalizeOps, then random s_tir primitives on every PrimFunc
    # (worker/tir_schedule.py) drawn from this seed, then the default build pipeline.
    schedule_seed: Optional[int] = None
    # pipeline "scheduled": these recorded steps (worker/schedule_steps.py's dicts) replayed
    # exactly instead of a draw from the seed. The reducer pins a finding's schedule this way,
    # so a smaller module keeps the schedule that failed (a new draw on it is another
    # schedule) and the steps themselves can be dropped one by one.
    schedule_steps: Optional[list] = None
    # pipeline "dlight": the dlight GPU rules applied (names in DLIGHT_RULES, in order)
    dlight: Optional[list] = None

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("schedule_seed", "schedule_steps", "dlight"):
            if d[k] is None:
                del d[k]   # keeps the JSON of unscheduled variants as it was
        return d

    @staticmethod
    def from_json(d: Optional[dict]) -> "Variant":
        return Variant(**d) if d else Variant()

    @property
    def kind(self) -> str:
        return self.target.get("kind", "llvm")

    @property
    def runs_on_cpu(self) -> bool:
        return self.kind in ("llvm", "c")

    @property
    def on_gpu(self) -> bool:
        return self.kind in GPU_KINDS

    @property
    def runnable_here(self) -> bool:
        """Can this host run what the variant builds? (CUDA: see gpu_available.)"""
        return runnable_here(self.to_json())

    @property
    def exact(self) -> bool:
        """Results are comparable with the numpy reference."""
        return not ({pass_name(p) for p in self.passes} & INEXACT_PASSES)

    def label(self) -> str:
        t = ",".join(f"{k}={v}" for k, v in self.target.items() if k != "kind")
        s = f"{self.kind}{'[' + t + ']' if t else ''}/{self.pipeline}"
        if self.passes:
            s += "(" + ",".join(self.passes) + ")"
        if self.dlight:
            s += "(" + ",".join(self.dlight) + ")"
        return s + ("/compiled" if self.exec_mode == "compiled" else "")


BASE = Variant()


CONST_FUSION_SHARE = 0.2   # of passes, when the program has constant operands


def random_passes(ch: Chooser, n: int, ops: tuple = ()) -> list[str]:
    """A random sequence from the zoo, each pass after those it needs. Fusion by pattern
    comes after FoldConstant half of the time: constants then exist for its ``@c`` operands
    and ``bind_constants``."""
    out: list[str] = []
    for _ in range(n):
        # A program with constant operands gets fusion by pattern more often: the pass
        # whose outcome depends on them (bind_constants, @c operands)
        bind = any(o.endswith("@c") for o in ops) and ch.boolean(CONST_FUSION_SHARE)
        p = random_pass(ch, ops, "FuseOpsByPattern" if bind else "")
        if pass_name(p) == "FuseOpsByPattern" and "FoldConstant" not in out \
                and ch.boolean(0.5):
            out.append("FoldConstant")
        need = _NEEDS_BEFORE.get(pass_name(p))
        chain = []
        while need and need not in out and need not in chain:
            chain.insert(0, need)
            need = _NEEDS_BEFORE.get(need)
        out.extend(chain + [p])
    return out


def make_pass(spec):
    """The relax.transform pass a zoo entry names, with its arguments (see RELAX_PASSES)."""
    from tvm import relax

    name, _, arg = spec.partition(":")
    if name == "ToMixedPrecision" and arg:
        return relax.transform.ToMixedPrecision(out_dtype=arg)
    if name == "ConvertLayout":
        nhwc = arg == "NHWC"
        two = ["NHWC", "OHWI"] if nhwc else ["NCHW", "OIHW"]
        one = ["NHWC"] if nhwc else ["NCHW"]
        # Only ops that take a desired layout: pools follow their producer's layout, and
        # their layout inference checks none is asked of them (ICHECK NoDesiredLayout)
        return relax.transform.ConvertLayout({
            "relax.nn.conv2d": two, "relax.nn.conv2d_transpose": two,
            "relax.image.resize2d": one})
    if name == "TopologicalSort" and arg:
        order, direction = arg.split(",")
        return relax.transform.TopologicalSort(order=order, direction=direction)
    if name == "FuseOpsByPattern":
        from tvm.relax.dpl import is_const, is_op, wildcard

        def call(op, inner=None):
            op, const = op[:-2] if op.endswith("@c") else op, op.endswith("@c")
            first = inner if inner is not None else wildcard()
            if const:
                return is_op(op)(first, is_const(), varg_default_wildcard=True)
            if inner is not None:
                return is_op(op)(first, varg_default_wildcard=True)
            return is_op(op)(varg_default_wildcard=True)

        body, _, flag = arg.partition("|")
        patterns = []
        for i, chain in enumerate(body.split(";")):
            pat = None
            for op in chain.split(">"):
                pat = call(op, pat)
            patterns.append((f"tvmfuzz_p{i}", pat))
        return relax.transform.FuseOpsByPattern(patterns, bind_constants=flag != "nobind")
    return getattr(relax.transform, name)()


def gpu_variant(ch: Chooser, kind: str) -> Variant:
    """A compile-only GPU variant: the target with a drawn arch (CUDA) and thread limit, built
    by its default pipeline, or with dlight's rules one at a time (each with Fallback for the
    kernels it declines) or its whole default list."""
    target: dict = {"kind": kind}
    if kind == "cuda":
        target["arch"] = ch.choice(CUDA_ARCHS)
    if ch.boolean(0.5):
        target["max_num_threads"] = ch.choice(GPU_THREADS[kind])
    how = ch.integer(0, 9)
    if how < 3:
        return Variant(target, "target")
    if how < 5:
        return Variant(target, "dlight", dlight=list(DLIGHT_RULES))
    rule = ch.choice(DLIGHT_RULES[:-1])
    return Variant(target, "dlight", dlight=[rule, "Fallback"])


def random_variant(ch: Chooser, cuda: bool = False, schedules: bool = False,
                   gpus: tuple = (), ops: tuple = ()) -> Variant:
    """One alternative variant: another opt level or CPU, the C backend, another pipeline, a
    random pass order, the compiled exec mode, or (when asked) a GPU target (``gpus``; ``cuda``
    is ``gpus=("cuda",)``) or a random schedule of the legalized PrimFuncs. ``ops``: see
    ``random_pass``."""
    gpus = tuple(gpus) or (("cuda",) if cuda else ())
    r = ch.integer(0, 99)
    if schedules and ch.boolean(0.2):
        target = {"kind": "llvm", "opt-level": ch.integer(0, 3)}
        return Variant(target, "scheduled", schedule_seed=ch.integer(0, 2**31 - 1))
    if gpus and r < 20 + 5 * (len(gpus) - 1):
        return gpu_variant(ch, ch.choice(gpus))
    if r < 15:
        return Variant({"kind": "c"}, "default")
    target = {"kind": "llvm", "opt-level": ch.integer(0, 3)}
    cpu = ch.choice(LLVM_CPUS)
    if cpu:
        target["mcpu"] = cpu
    pipeline = ch.weighted(["default", "target", "zero", "passes"], [2, 3, 2, 3])
    passes = random_passes(ch, ch.integer(1, 5), ops) if pipeline == "passes" else []
    return Variant(target, pipeline, passes, "compiled" if ch.boolean(0.2) else "bytecode")


def runnable_here(variant) -> bool:
    """Can this host run what the variant builds: a GPU for CUDA, the CPU features code for
    its -mcpu needs (else it is compile-only)."""
    kind = variant["target"].get("kind", "llvm")
    if kind == "cuda":
        return gpu_available(variant["target"].get("arch"))
    if kind not in ("llvm", "c"):
        return False   # a GPU target with no device here: compile-only
    needs = _CPU_NEEDS.get(variant["target"].get("mcpu", ""))
    return needs is not None and set(needs) <= _host_cpu_flags()


@functools.lru_cache(maxsize=1)
def _host_cpu_flags() -> frozenset:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def gpu_available(arch=None) -> bool:
    """A CUDA device exists and, given the target's ``arch``, can run code built for it. Asks
    TVM in this process: call only in a sandbox child."""
    try:
        import tvm

        dev = tvm.cuda(0)
        return bool(dev.exist) and (not arch or arch_runs_on(arch, dev.compute_version))
    except Exception:  # noqa: BLE001
        return False


def arch_runs_on(arch: str, compute_version: str) -> bool:
    """Does a device of ``compute_version`` ("9.0") run TVM's CUDA build for ``arch``
    ("sm_80", "sm_90a")? TVM loads a cubin, with no PTX to compile for another chip: the
    same major version and a minor one not above the device's (an sm_80 build on an sm_90
    H100 fails with CUDA_ERROR_NO_BINARY_FOR_GPU, the host's mismatch, not TVM's bug)."""
    digits = arch.rsplit("_", 1)[-1].rstrip("abcdefghijklmnopqrstuvwxyz")
    major, _, minor = compute_version.partition(".")
    return len(digits) >= 2 and digits[:-1] == major and int(digits[-1]) <= int(minor or 0)


# --- building (TVM) ---------------------------------------------------------------------------
SCHEDULE_PASS = "tvmfuzz.RandomSchedule"   # the pass name tvmfuzz's own schedule step runs as

# How a variant is built: the one copy. The functions in REPRO_CODE take the variant as plain
# data (its JSON dict) and use nothing but TVM, their arguments and each other, because
# reducer/repro.py writes their source into every Relax repro.py as it is (inspect.getsource):
# a reproducer builds with the very code the finding was built with. ``schedule`` is what the
# "scheduled" pipeline does between LegalizeOps and the default build: in the worker a random
# s_tir schedule drawn from the variant's seed (``build`` below), in a repro.py the replay of
# the schedule that was applied, as TVM's own trace (worker.schedule_trace.replay_traces).
def target_for(variant):
    """The TVM target of a variant (a dict as 0.27 takes it; a GPU target gets an llvm host)."""
    import tvm

    if variant["target"].get("kind", "llvm") not in ("llvm", "c"):
        return tvm.target.Target(variant["target"], host={"kind": "llvm"})
    return tvm.target.Target(variant["target"])


def import_pass(spec):
    """A pass named "module:attr" (a TVM fork's own pass, or a test's planted bug)."""
    import importlib

    module, _, attr = spec.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    return obj() if callable(obj) and not hasattr(obj, "info") else obj


def pipeline_for(variant, target, schedule=None):
    """The Relax pipeline of a variant: "default" (relax.build's own), "target" (the target's
    default pipeline), "zero", "passes" (the recorded pass order, then the default build),
    "scheduled" (LegalizeOps, ``schedule``, then the default build); extra passes first."""
    import tvm
    from tvm import relax

    kind = variant.get("pipeline", "default")
    if kind == "target":
        pipeline = relax.get_default_pipeline(target)
    elif kind == "zero":
        pipeline = tvm.transform.Sequential([relax.get_pipeline("zero"),
                                             relax.pipeline.default_build_pipeline()])
    elif kind == "passes":
        pipeline = tvm.transform.Sequential(
            [make_pass(p) for p in variant.get("passes") or []]
            + [relax.pipeline.default_build_pipeline()])
    elif kind == "dlight":
        from tvm.s_tir import dlight as dl

        rules = [getattr(dl.gpu, r)() for r in variant.get("dlight") or ["Fallback"]]
        # The target's default pipeline with these rules in place of its own list. Its
        # backend module directly: 0.27's relax.pipeline.dataflow_lower_passes asks
        # relax.backend.cuda for a name that package does not export (AttributeError).
        import importlib

        backend = importlib.import_module("tvm.relax.backend." + (
            "cuda.pipeline" if target.kind.name == "cuda" else "gpu_generic.pipeline"))
        legalize = [p for p in backend.legalize_passes(target)
                    if p.info.name != "ApplyDefaultSchedule"] + [dl.ApplyDefaultSchedule(*rules)]
        pipeline = tvm.transform.Sequential(
            backend.library_dispatch_passes(target) + legalize
            + backend.dataflow_lower_passes(target) + backend.finalize_passes(target))
    elif kind == "scheduled":
        if schedule is None:
            raise ValueError("the scheduled pipeline needs the schedule to apply")
        # tvmfuzz's own step, not a TVM pass: its name says so wherever a pass is named.
        step = tvm.transform.module_pass(lambda mod, ctx: schedule(mod), opt_level=0,
                                         name=SCHEDULE_PASS)
        pipeline = tvm.transform.Sequential([relax.transform.LegalizeOps(), step,
                                             relax.pipeline.default_build_pipeline()])
    else:
        pipeline = "default"
    if variant.get("extra_passes"):
        if pipeline == "default":
            pipeline = relax.pipeline.default_build_pipeline()
        pipeline = tvm.transform.Sequential([import_pass(p) for p in variant["extra_passes"]]
                                            + [pipeline])
    return pipeline


def build_for(mod, variant, schedule=None):
    """relax.build of ``mod`` as the variant says (target, pipeline, exec mode)."""
    from tvm import relax

    target = target_for(variant)
    with target:
        return relax.build(mod, target, relax_pipeline=pipeline_for(variant, target, schedule),
                           exec_mode=variant.get("exec_mode", "bytecode"))


def vm_for(ex, variant, workdir):
    """A VirtualMachine for a built executable; the C backend goes through a shared library."""
    import os

    import tvm
    from tvm import relax

    kind = variant["target"].get("kind", "llvm")
    if kind == "c":
        path = os.path.join(workdir, "case.so")
        ex.export_library(path)
        return relax.VirtualMachine(tvm.runtime.load_module(path), tvm.cpu())
    return relax.VirtualMachine(ex, tvm.cuda(0) if kind == "cuda" else tvm.cpu())


REPRO_CONSTANTS = ("_CPU_NEEDS", "SCHEDULE_PASS")


# The worker's side: Variant objects, and for "scheduled" a random schedule from the seed.
def tvm_target(v: Variant):
    return target_for(v.to_json())


def relax_pipeline(v: Variant, target):
    return pipeline_for(v.to_json(), target, _random_schedule(v.schedule_seed or 0)
                        if v.pipeline == "scheduled" else None)


# The steps the last "scheduled" build applied (per process: one sandbox child builds one
# case at a time), for the finding (outcome.extra["schedule"]) and the campaign's statistics.
LAST_SCHEDULE: list = []
# Why the last replay of recorded steps stopped at a step that does not apply, if it did.
LAST_REFUSED: list = []


def _recorded(apply):
    """The "scheduled" pipeline's step around ``apply(mod) -> (new_mod, steps)``: the steps it
    applied go to LAST_SCHEDULE, the one that crashed too (apply_schedule and random_schedule
    attach it); a recorded step that no longer applies (StepRefused: its function, block or
    loop is gone) goes to LAST_REFUSED, which the judge calls invalid: the case changed, TVM
    did nothing wrong."""
    from . import tir_schedule as TS

    def schedule(mod):
        LAST_SCHEDULE.clear()
        LAST_REFUSED.clear()
        try:
            new, applied = apply(mod)
        except TS.StepRefused as e:
            LAST_REFUSED.append(str(e))   # TVM's FFI hands it back as another type
            raise
        except BaseException as e:
            step, before = TS.failed_step(e)
            LAST_SCHEDULE.extend(before + ([step] if step else []))
            raise
        LAST_SCHEDULE.extend(applied)
        return new

    return schedule


def _random_schedule(seed: int):
    """A random schedule drawn from ``seed`` (4 tries per PrimFunc); refused draws are
    skipped inside random_schedule, so LAST_REFUSED stays empty."""
    import random

    from . import tir_schedule as TS

    return _recorded(lambda mod: TS.random_schedule(mod, random.Random(seed), steps=4))


def _replay_schedule(steps: list):
    """Recorded steps replayed exactly (a reducer's pinned schedule)."""
    from . import tir_schedule as TS

    return _recorded(lambda mod: (TS.apply_schedule(mod, steps), steps))


def build(mod, v: Variant, schedule=None):
    """Build ``mod`` as ``v`` says; a "scheduled" variant replays its recorded steps, or else
    draws its random schedule from its seed, unless ``schedule`` (a function of the module)
    is given."""
    LAST_REFUSED.clear()
    if schedule is None and v.pipeline == "scheduled":
        schedule = (_replay_schedule(v.schedule_steps) if v.schedule_steps is not None
                    else _random_schedule(v.schedule_seed or 0))
    return build_for(mod, v.to_json(), schedule)


def cuda_source(ex) -> str:
    """The CUDA source of a built executable's device module ("" when it has none)."""
    def walk(m):
        if m.kind == "cuda":
            return m.inspect_source()
        return next((s for s in (walk(i) for i in m.imports) if s), "")

    return walk(ex.mod)


def nvcc_for(ex, variant) -> None:
    """Compile a CUDA variant's device code to a cubin with nvcc, where nvcc is on the PATH
    (the compile-only path without a GPU; raises when nvcc refuses TVM's source)."""
    import shutil

    if variant["target"].get("kind") != "cuda" or not shutil.which("nvcc"):
        return
    from tvm.support import nvcc   # 0.27: tvm.contrib.nvcc moved here

    src = cuda_source(ex)
    if src:
        with target_for(variant):   # nvcc reads the arch from the current target
            nvcc.compile_cuda(src, target_format="cubin", arch=variant["target"].get("arch"),
                              compiler="nvcc")


def nvcc_compile(ex, v: Variant) -> None:
    nvcc_for(ex, v.to_json())


REPRO_CODE = (target_for, import_pass, make_pass, pipeline_for, build_for, vm_for, runnable_here,
              _host_cpu_flags, gpu_available, arch_runs_on, cuda_source, nvcc_for)


def load_vm(ex, v: Variant, workdir: str):
    return vm_for(ex, v.to_json(), workdir)
