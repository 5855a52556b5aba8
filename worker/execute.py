"""Compile and run one case in this process, stage by stage, and judge it.

This is the unit of work the sandbox runs in a child process. Each stage is named so a failure
says where TVM broke: materialize, well_formed, build, vm_load, run, compare.
"""
from __future__ import annotations

import contextlib
import functools
import re
import time
import posixpath
import traceback
from typing import Any, Optional

import numpy as np

from fuzz import compat
from fuzz import reference
from fuzz.inputs import make_inputs
from fuzz.materialize import (InferenceMismatch, MaterializeError, PrimFuncRefused,
                              from_script, materialize, to_script)
from fuzz.model import Program
from fuzz.outcome import Outcome  # noqa: F401 - the judges' result, re-exported

from . import breadcrumb
from .schedule_noise import is_schedule_noise
from fuzz.signature import signature
from .variants import (BASE, LAST_REFUSED, SCHEDULE_PASS, Variant, build, load_vm,
                       nvcc_available, nvcc_compile)

STAGES = ("materialize", "well_formed", "build", "vm_load", "run", "reference", "compare")


def tvm_throw_site(exc: BaseException) -> str:
    """The C++ throw site: the one traceback frame whose file lies under TVM's ``src/``. A
    Python error inside one of dlight's rules (which all run as one pass,
    ``ApplyDefaultSchedule``) has none: its innermost frame in dlight names the rule."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        fn = fr.filename.replace("\\", "/")
        if "/src/" in fn and not fn.endswith(".py") and not fn.endswith(".pxi"):
            # src/relax/op/distributed/../op_common.h is src/relax/op/op_common.h: one file
            return f"{posixpath.normpath(fn[fn.index('/src/') + 1:])}:{fr.lineno}"
    for fr in reversed(frames):
        fn = fr.filename.replace("\\", "/")
        if "/tvm/s_tir/dlight/" in fn:
            return f"python/{fn[fn.index('/tvm/s_tir/dlight/') + 1:]}:{fr.lineno}"
    return ""


@functools.lru_cache(maxsize=None)
def _pass_watch_class():
    import tvm
    from tvm import relax

    @tvm.ir.instrument.pass_instrument
    class PassWatch:
        """Knows the pass that is running (the failing pass of a crash) and checks Relax
        well-formedness after each pass, naming the first pass that produced ill-formed IR."""

        def __init__(self, check_well_formed=True):
            self.check = check_well_formed
            self.stack = []             # passes running now, nested (Sequential, pipelines)
            self.finished = 0           # passes that ran to their end
            self.ill_formed_after = None
            self.ill_formed_why = ""    # well_formed's own reason, where it gives one
            self.host_code = []         # PrimFuncs for a GPU target left with no GPU thread
            self.overlaps = []          # tensors memory planning placed over live ones
            self.planned = ""           # the function they are in, as planned

        def ill_formed_message(self) -> str:
            """'<pass> produced ill-formed IR', with well_formed's reason (the binding whose
            annotation no longer holds, say) where it gave one."""
            why = f": {self.ill_formed_why}" if self.ill_formed_why else ""
            return f"{self.ill_formed_after} produced ill-formed IR{why}"

        @property
        def current(self):
            """The innermost pass running now: "" between passes and after the last one (an
            exception then comes from code generation, which is no pass)."""
            generic = ("sequential", "_pipeline")
            named = [p for p in self.stack if p not in generic]
            return named[-1] if named else ""

        @property
        def phase(self):
            """Where a build failed: the pass running, "codegen" after the last pass finished
            (VM or target code generation), "" before any pass ran."""
            return self.current or ("codegen" if self.finished and not self.stack else "")

        def run_before_pass(self, mod, info):
            self.stack.append(info.name)
            breadcrumb.mark(**{"pass": self.current or None})
            if info.name == "tirx.SplitHostDevice" and not self.host_code:
                try:
                    self.host_code = unbound_gpu_funcs(mod)
                except Exception:  # noqa: BLE001 - tvmfuzz's check, never the build's failure
                    self.host_code = []

        def run_after_pass(self, mod, info):
            # This pass, and any pass above it that never finished (one that raised inside it
            # and was caught there), are no longer running.
            if info.name in self.stack:
                del self.stack[len(self.stack) - 1 - self.stack[::-1].index(info.name):]
            self.finished += 1
            breadcrumb.mark(**{"pass": self.current or None})
            if info.name == "StaticPlanBlockMemory" and not self.overlaps:
                try:
                    self.overlaps = planned_overlaps(mod)
                    if self.overlaps:   # the planned function, as evidence for the report
                        self.planned = mod[self.overlaps[0][0]].script()
                except Exception:  # noqa: BLE001 - tvmfuzz's check, never the build's failure
                    self.overlaps = []
            if not self.check or self.ill_formed_after or not _has_relax(mod):
                return
            try:
                ok = relax.analysis.well_formed(mod) is not False
            except Exception as e:  # noqa: BLE001 - a refusal with its reason
                ok = False
                why = " ".join(str(e).split())
                # An op prints as its whole registry entry (ir.Op(span=None, ..., name="relax.
                # call_tir", arguments=(...), support_level=10)): its name, so the 400 characters
                # kept hold the reason that follows it ("Argument 0 type mismatch ...").
                why = re.sub(r'ir\.Op\(span=[^"]*name="([^"]+)".*?support_level=\d+\)', r"Op(\1)",
                             why)
                self.ill_formed_why = why[:400]
            if not ok:
                self.ill_formed_after = info.name

    return PassWatch


def unbound_gpu_funcs(mod) -> list:
    """(name, target kind) of each PrimFunc of ``mod`` (as SplitHostDevice receives it) that
    is for a GPU target, takes arguments, and binds no GPU thread: SplitHostDevice leaves it whole
    on the host, whose code then reads the device's memory (index_put on CUDA segfaulted so on
    an H200; a compile-only build shows it without a GPU)."""
    from tvm import tirx

    found = []
    for gv, f in mod.functions.items():
        if not isinstance(f, tirx.PrimFunc) or not f.params:
            continue
        target = f.attrs.get("target") if f.attrs else None
        kind = target.kind.name if target is not None else ""
        if kind not in ("cuda", "opencl", "vulkan", "metal", "rocm", "webgpu"):
            continue
        text = f.script()
        # (host code that only hands the buffers to a library, call_packed, is that library's
        # business)
        if not gpu_thread(text) and "call_packed" not in text and "call_extern" not in text:
            found.append((gv.name_hint, kind))
    return sorted(found)


def planned_overlaps(mod) -> list:
    """(function, storage, tensor, live tensor, the view it is live through) for each
    ``R.memory.alloc_tensor`` that static memory planning put in a storage, at an offset,
    where an earlier tensor still lives: a later binding reads it, itself or through a view
    of it (a rebinding, ``match_cast``, ``reshape``, ``vm.builtin.reshape``, a tuple's field;
    making a view that nothing reads is no read).
    Top-level bindings only: an ``R.If`` is one binding that reads what its branches read (a
    tensor allocated in a branch is not followed)."""
    import tvm
    from tvm import relax

    views = ("vm.builtin.reshape", "relax.reshape", "relax.memory.view")
    found = []
    for gv, f in mod.functions.items():
        if not isinstance(f, relax.Function) or not isinstance(f.body, relax.SeqExpr):
            continue
        roots = {}      # var -> {root tensor: the view it is read through ("" itself)}
        fields = {}     # a var bound to a tuple expression -> its fields' roots
        place = {}      # root tensor -> (storage var, offset), in binding order
        born = {}       # root tensor -> index of its alloc_tensor binding
        last = {}       # root tensor -> (index of its last read, the view it was read by)

        def of(x) -> dict:
            return dict(roots.get(x, {})) if isinstance(x, relax.Var) else {}

        def read(expr, at):
            for v in relax.analysis.free_vars(expr):
                for r, via in roots.get(v, {}).items():
                    if at >= last.get(r, (-1, ""))[0]:
                        last[r] = (at, via)

        i = 0
        for block in f.body.blocks:
            for b in block.bindings:
                i += 1
                value, var = b.value, b.var
                op = getattr(value, "op", None)
                name = (op.name if isinstance(op, tvm.ir.Op) else op.global_symbol
                        if isinstance(op, relax.ExternFunc) else "")
                if name == "relax.memory.alloc_tensor":
                    off = value.args[1]
                    place[var] = (value.args[0], str(getattr(off, "value", off)))
                    born[var] = i
                    roots[var] = {var: ""}
                    continue
                if name in ("relax.memory.kill_tensor", "relax.memory.kill_storage"):
                    continue
                if isinstance(b, relax.MatchCast):
                    roots[var] = {r: via or "match_cast" for r, via in of(value).items()}
                elif isinstance(value, relax.Var):
                    roots[var] = of(value)
                    if value in fields:
                        fields[var] = fields[value]
                elif name in views:
                    roots[var] = {r: via or name for r, via in of(value.args[0]).items()}
                elif isinstance(value, relax.Tuple):
                    fields[var] = [of(x) for x in value.fields]
                    roots[var] = {r: via for x in fields[var] for r, via in x.items()}
                elif isinstance(value, relax.TupleGetItem):
                    t = value.tuple_value
                    roots[var] = (dict(fields[t][value.index]) if t in fields
                                  and value.index < len(fields[t]) else of(t))
                else:   # a view is no read: a binding that reads it later reads its root
                    read(value, i)
        read(f.body.body, i + 1)
        for t, at in born.items():
            for r, first in born.items():
                storage = place[r][0]
                if r is t or place[r] != place[t] or not isinstance(storage, relax.Var):
                    continue
                end, via = last.get(r, (first, ""))
                if first < at < end:
                    found.append((_name(gv), _name(storage), _name(t), _name(r),
                                  via or "direct"))
    return sorted(found)


def _name(v) -> str:
    """A variable's name on every release (0.26's unified Var calls it ``name``)."""
    n = getattr(v, "name_hint", None)
    return str(n if n is not None else getattr(v, "name", "?"))


def overlap_message(found: list) -> str:
    """What memory planning did, in words that stay the same however a reduction renames the
    variables (they are in the outcome's extra, and in the report)."""
    via = found[0][4]
    how = "itself" if via == "direct" else f"through {via}"
    return (f"StaticPlanBlockMemory reuses the storage of a live tensor, read later {how}")


def overlap_detail(found: list) -> str:
    return "\n".join(f"{fn}: {t} placed in {st} over {r}, which is read later "
                      f"({'itself' if via == 'direct' else 'through ' + via})"
                      for fn, st, t, r, via in found)


def gpu_thread(text: str) -> str:
    """The first GPU thread a PrimFunc's printed TIR binds ("threadIdx.x"; 0.27 has no
    Python TIR visitor), "" where it binds none."""
    m = _GPU_THREAD.search(text)
    return m.group(0) if m else ""


def host_code_message(found: list) -> str:
    names = ", ".join(name for name, _ in found)
    return (f"PrimFunc {names} for {found[0][1]} binds no GPU thread: built as host code "
            f"that reads device memory")


def _has_relax(mod) -> bool:
    from tvm import relax

    return any(isinstance(f, relax.Function) for f in mod.functions.values())


def pass_watch(check_well_formed: bool = True):
    """A PassWatch instrument (its class is made on first use: it needs TVM imported)."""
    return _pass_watch_class()(check_well_formed)


def _fail(stage: str, exc: BaseException, kind: str = "crash", verdict: str = "fail",
          **kw) -> Outcome:
    msg = str(exc).strip()
    if _INSTALL_INCOMPLETE.match(msg):
        # TVM's libinfo finds no headers to compile against (a TVM installed without them):
        # the machine's install, not TVM's bug (seen on a GPU machine with a trimmed install)
        return Outcome("invalid", "environment", stage, type(exc).__name__,
                       first_message_line(msg))
    return Outcome(verdict, kind, stage, type(exc).__name__, first_message_line(msg),
                   tvm_throw_site(exc), msg[-4000:], **kw)


_OTHER_SIGNATURE = re.compile(r"^\w+\(\) (?:got an unexpected keyword argument|missing \d+ "
                              r"required positional argument)")
_GPU_THREAD = re.compile(r"\b(?:blockIdx|threadIdx|vthread)\.[xyz]\b")
_INSTALL_INCOMPLETE = re.compile(r"Cannot find (?:TVM )?include path")
_COMPILER_ERROR = re.compile(r"^\S*?(?:\(\d+\))?:?\s*(?:fatal )?error:\s*(.+)$", re.M)


def first_message_line(msg: str) -> str:
    """What names a failure: its first line; for a compiler run that failed (nvcc, gcc: TVM
    raises "<the generated source>\nCompilation error:\n<compiler output>"; NVRTC, where a GPU
    is present: "NVRTC compilation failed:\n<its output>"), the compiler's first error instead
    of the line that only says it failed."""
    for head in ("Compilation error:", "NVRTC compilation failed:"):
        if head in msg:
            m = _COMPILER_ERROR.search(msg.split(head, 1)[1])
            if m:
                return f"{head} {m.group(1).strip()}"
    return msg.splitlines()[0] if msg else ""


def _to_numpy(x):
    if isinstance(x, (list, tuple)) or type(x).__name__ == "Array":
        return [_to_numpy(v) for v in x]
    if isinstance(x, compat.tensor_class()):
        return x.numpy()
    return np.asarray(x)


def compile_and_run(program: Program, variants: Optional[list] = None, input_seed: int = 0,
                    check_well_formed: bool = True, roundtrip: bool = True) -> Outcome:
    """Judge one program-model case under each compile variant (default: llvm, default
    pipeline); the first finding wins. Outputs are compared with numpy (valid programs, exact
    variants) and with the first variant that ran (every program: the cross-target oracle)."""
    import tvm

    variants = _variants(variants)
    t0 = time.perf_counter()
    near_valid = program.meta.get("mode") == "near-valid"
    breadcrumb.mark(stage="materialize")
    try:
        with _ops_marked():
            mod = materialize(program, check_types=not near_valid)
    except InferenceMismatch as e:
        # Class 2: TVM's inferred shape or dtype is not what the op computes.
        return finish(_fail("materialize", e, kind="shape_inference",
                            extra={"op": e.op, "node": e.node, "func": e.func}),
                      t0, variants[0], [])
    except PrimFuncRefused as e:
        # A call_tir's PrimFunc the parser refuses: a finding where a known TVM defect
        # explains it (as the TIR judge does), named by the parser's line; else the
        # generator's mistake.
        from fuzz.calltir import prim_of
        from fuzz.tir.build import known_bug

        if known_bug(prim_of(e.node), str(e)):
            o = _fail("materialize", e.error, extra={"node": e.node.name})
            o.message = str(e)
            return finish(o, t0, variants[0], [])
        return finish(_fail("materialize", e.error, "generator", "invalid"), t0, variants[0],
                      [])
    except (MaterializeError, ValueError, TypeError, tvm.error.DiagnosticError) as e:
        if isinstance(e, TypeError) and _OTHER_SIGNATURE.search(str(e)):
            # An op's Python function takes other arguments in the TVM under test (0.25's
            # affine_grid has no align_corners): the catalogue follows 0.27's spelling; the
            # release's API, not the generator's mistake nor a bug.
            return finish(Outcome("invalid", "environment", "materialize", "TypeError",
                                  f"this TVM release's op takes other arguments: {e}"),
                          t0, variants[0], [])
        if near_valid and not isinstance(e, (MaterializeError, TypeError)):
            # A mutant's broken promise refused while the module is built (permute_dims axes
            # [0, 0, 0]: "required to be non-repetitive"): TVM's check doing its job.
            return finish(_fail("materialize", e, kind="rejected", verdict="rejected"), t0,
                          variants[0], [])
        # TVM rejected the program while it was being built: the generator's mistake.
        return finish(_fail("materialize", e, "generator", "invalid"), t0, variants[0], [])
    except Exception as e:  # noqa: BLE001
        return finish(_fail("materialize", e), t0, variants[0], [])
    return judge_module(mod, ProgramInputs(program, input_seed), variants, near_valid,
                        check_well_formed=check_well_formed, roundtrip=roundtrip, t0=t0)


def _variants(variants: Optional[list]) -> list:
    return [Variant.from_json(v) if isinstance(v, dict) else v for v in (variants or [BASE])]


class ProgramInputs:
    """What a program-model case gives the judge: inputs drawn in its parameters' ranges
    (``fuzz.inputs``), the numpy reference (valid programs only: a near-valid mutant has none)
    and its tolerances, and the op and dtype that name a wrong output."""

    def __init__(self, program: Program, input_seed: int = 0):
        self.program, self.seed, self.entry = program, input_seed, program.entry
        self.env: dict = {}
        self.has_reference = program.meta.get("mode") != "near-valid"

    def make(self) -> list:
        self.env, args = make_inputs(self.program, self.seed)
        return args

    def refused(self, e: BaseException, stage: str = "reference") -> Outcome:
        """tvmfuzz could not make the inputs or the reference, or read a result: the
        generator's defect, never a finding."""
        return _fail(stage, e, "generator", "invalid")

    def vm_args(self, args: list, v: Variant) -> list:
        return [_tensor(a, v) for a in args]

    def outputs(self, out) -> list:
        return reference.flatten(_to_numpy(out))

    def reference(self, args: list) -> list:
        return reference.flatten(reference.run(self.program, args, self.env))

    def differs(self, expected: list, actual: list) -> Optional[tuple]:
        """(index of the first output that differs, description) or None."""
        return reference.compare(self.program, expected, actual)

    def numeric_key(self, index: int) -> str:
        return reference.numeric_key(self.program, index)

    def probe(self, index: int):
        """(program, value names): the case returning every value output ``index`` depends
        on (``fuzz.reference.probe_program``), or None."""
        return reference.probe_program(self.program, index)

    def probe_module(self, prog: Program, args: list) -> Optional[tuple]:
        """(the module to build, its arguments, the reference's values, flat) of a probe
        program (``probe``), made as the case's module is: here materialized, the case's
        inputs, numpy. None (or an exception) where the probe cannot be made so: it then
        names nothing."""
        return (materialize(prog, check_types=False), list(args),
                reference.flatten(reference.run(prog, args, self.env)))

    def exact(self, v: Variant) -> bool:
        """Are ``v``'s results comparable with numpy's for this program? Not after
        DecomposeOpsForInference where an op runs in training mode: by its documentation it
        decomposes ops "during inference", so a training-mode batch_norm becomes the
        inference one by design (campaign seed 90000, bug 02892e934f73)."""
        return "DecomposeOpsForInference" not in v.passes or not any(
            n.attrs.get("training") for f in self.program.functions for n in f.nodes())


def judge_module(mod, source, variants: list, near_valid: bool = False,
                 check_well_formed: bool = True, roundtrip: bool = True,
                 t0: Optional[float] = None) -> Outcome:
    """The one judging loop of a Relax module, whatever it came from (a program-model case,
    a user's or the reducer's TVMScript): verifier, then each variant built with the failing
    pass named, loaded and run, compared with the reference where ``source`` has one and with
    the first variant that ran; the print/parse round trip last. ``source`` gives the inputs
    and the reference (``ProgramInputs``, ``worker.script_judge.TextInputs``); where its own
    code fails (making the inputs, handing them to the VM, reading a result back) it says
    what that is (``source.refused(e, stage)``: ``invalid``, never a TVM finding)."""
    import tempfile

    import tvm

    t0 = time.perf_counter() if t0 is None else t0
    steps: list = []   # s_tir schedule steps a "scheduled" variant applied

    def done(o: Outcome, v: Variant = variants[0]) -> Outcome:
        return finish(o, t0, v, steps)

    wf = True
    if check_well_formed:
        breadcrumb.mark(stage="well_formed")
        wf, finding = well_formed_verdict(mod, near_valid)
        if finding is not None:
            return done(finding)
    args = None       # made once the first variant built: a build failure needs none
    expected = None   # the reference, computed after TVM's first run (TVM goes first: a
    #                   crash in TVM is the finding even where numpy would refuse the case)
    first: Optional[tuple] = None   # (variant, outputs, exact?) of the first variant that ran
    with tempfile.TemporaryDirectory(prefix="tvmfuzz-") as workdir:
        for v in variants:
            watch = pass_watch(wf and check_well_formed)
            exact = v.exact and source.exact(v)
            breadcrumb.mark(stage="build", variant=v.to_json())
            try:
                try:
                    with tvm.transform.PassContext(instruments=[watch]):
                        ex = build(mod, v)
                finally:
                    if v.pipeline == "scheduled":
                        exact = exact and _record_schedule(steps)
                if v.kind == "cuda" and nvcc_available():
                    nvcc_compile(ex, v)
            except Exception as e:  # noqa: BLE001
                return done(_build_failure(e, v, wf, near_valid, watch, steps), v)
            if watch.ill_formed_after:
                return done(Outcome("fail", "pass_ill_formed", "build", "",
                                    watch.ill_formed_message(),
                                    extra={"failing_pass": watch.ill_formed_after}), v)
            if watch.host_code:
                return done(Outcome("fail", "gpu_host_code", "build", "",
                                    host_code_message(watch.host_code),
                                    extra={"failing_pass": "tirx.SplitHostDevice",
                                           "host_funcs": [n for n, _ in watch.host_code]}), v)
            if watch.overlaps:
                return done(Outcome("fail", "memory_plan_overlap", "build", "",
                                    overlap_message(watch.overlaps),
                                    detail=overlap_detail(watch.overlaps) + "\n\n"
                                    + watch.planned,
                                    extra={"failing_pass": "StaticPlanBlockMemory",
                                           "view": watch.overlaps[0][4],
                                           "overlaps": overlap_detail(watch.overlaps)}), v)
            if not v.runnable_here:
                continue   # compile-only: CUDA without a GPU, or code for another CPU
            if args is None:
                try:
                    args = source.make()
                except Exception as e:  # noqa: BLE001
                    return done(source.refused(e), v)
            breadcrumb.mark(stage="vm_load", **{"pass": None})
            try:
                vm = load_vm(ex, v, workdir)
            except Exception as e:  # noqa: BLE001
                return done(_fail("vm_load", e), v)
            try:
                vm_args = source.vm_args(args, v)
            except Exception as e:  # noqa: BLE001 - tvmfuzz's arguments, not TVM's failure
                return done(source.refused(e, "inputs"), v)
            breadcrumb.mark(stage="run")
            watch_kernels(vm)
            try:
                out = vm[source.entry](*vm_args)
            except Exception as e:  # noqa: BLE001
                return done(_fail("run", e), v)
            try:
                actual = source.outputs(out)
            except Exception as e:  # noqa: BLE001 - tvmfuzz cannot read the result
                return done(source.refused(e, "outputs"), v)
            if not wf:
                # Ill-formed by the verifier's word, yet it built and ran.
                return done(Outcome("fail", "verifier_build", "well_formed", "",
                                    "ill-formed module builds and runs"), v)
            if expected is None and source.has_reference:
                try:
                    expected = source.reference(args)
                except Exception as e:  # noqa: BLE001
                    return done(_fail("reference", e, "generator", "invalid"))
            if expected is not None and exact:
                diff = source.differs(expected, actual)
                if diff:
                    from .uninit import reads_uninitialized

                    index, text = diff
                    uninit = reads_uninitialized(lambda: _rerun(source, vm, args, v), actual)
                    key, more = source.numeric_key(index), {}
                    if not uninit and not (v.pipeline == "scheduled" and steps):
                        # Named by the first op whose own result is wrong, not by the op
                        # that made the output (a softplus overflowing to inf shows through
                        # the abs after it).
                        op = _guilty_op(source, index, v, args, workdir)
                        if op and op != key:
                            key, more["output_op"] = op, key
                    if v.pipeline == "scheduled" and steps:
                        # The step that made it wrong names the bug, not the op whose output
                        # shows it (None: no prefix of the schedule is wrong alone).
                        guilty = _guilty_step(mod, source, v, args, expected, steps, workdir,
                                              uninit=bool(uninit))
                        more["guilty_step"] = guilty
                        if guilty:
                            key += f" after {guilty.get('prim')}"
                    return done(Outcome("fail", "numeric", "compare", "", text.split(";")[0],
                                        "", text, extra={"numeric_key": key,
                                                         "reads_uninitialized": uninit, **more}),
                                v)
            elif first is not None and exact and first[2]:
                diff = source.differs(first[1], actual)
                if diff:
                    index, text = diff
                    return done(Outcome("fail", "numeric", "compare", "", "differs from "
                                        f"{first[0].label()}: " + text.split(";")[0], "", text,
                                        extra={"numeric_key": source.numeric_key(index),
                                               "versus": first[0].to_json()}), v)
            if first is None:
                first = (v, actual, exact)
    # Last, so a round-trip finding means the module also built, ran and agreed.
    if roundtrip and wf:
        breadcrumb.mark(stage="roundtrip", variant=None)
        rt = roundtrip_problem(mod, second_generation=near_valid)
        if rt:
            return done(Outcome("fail", "roundtrip", "roundtrip", rt[0], rt[1], "", rt[2]))
    return done(Outcome("pass"))


def _build_failure(e: BaseException, v: Variant, wf: bool, near_valid: bool, watch,
                   steps: list) -> Outcome:
    """What a failed build of a Relax module is."""
    compiler = str(e).split("Compilation error:", 1)[1] if "Compilation error:" in str(e) \
        else None   # nvcc's output after TVM's CUDA source (worker.variants.nvcc_for)
    if compiler is not None and v.kind == "cuda":
        fatal = [ln.strip() for ln in compiler.splitlines() if "nvcc fatal" in ln]
        if fatal:
            # This nvcc cannot compile for the arch asked (CUDA 13 has no sm_50): the
            # machine's toolchain, not TVM.
            return Outcome("invalid", "environment", "build", type(e).__name__, fatal[0])
        return _fail("build", e, kind="crash", extra={"failing_pass": "nvcc"})
    text = str(e)
    if v.kind == "cuda" and text.startswith("NVRTC compilation failed") and (
            "gpu-architecture" in text or "NVRTC_ERROR_INVALID_OPTION" in text):
        # Where a GPU is present TVM compiles with NVRTC, which refuses an arch it lacks
        # with an invalid option (the sm_50 test failed so on an H200): the toolchain again.
        return Outcome("invalid", "environment", "build", type(e).__name__,
                       first_message_line(text))
    if not wf:
        # Verifier and build agree the module is wrong: a mutant's expected end.
        return _fail("build", e, kind="rejected", verdict="rejected")
    if v.pipeline == "scheduled" and v.schedule_steps is not None and LAST_REFUSED:
        # A recorded step that no longer applies to this module (a reducer's candidate lost
        # the block it names): the case changed, TVM did nothing wrong.
        return Outcome("invalid", "generator", "schedule", "StepRefused",
                       "recorded schedule step no longer applies: " + LAST_REFUSED[0])
    if v.pipeline == "scheduled" and is_schedule_noise(str(e)):
        # A lowering precondition no s_tir primitive checks (nested parallel loops, a
        # vectorized loop of symbolic extent): TVM's stated refusal.
        return _fail("build", e, kind="schedule_noise", verdict="rejected")
    if watch.ill_formed_after:
        # The crash follows a pass that broke the IR: that pass is the culprit, and what it
        # broke (well_formed's reason) names the bug, as when the build goes on to succeed;
        # the crash it led to is kept beside it (a near-valid mutant's CodeGenVM refusal
        # after StaticPlanBlockMemory's undefined Var was a second bucket of that bug).
        crash = _fail("build", e)
        return Outcome("fail", "pass_ill_formed", "build", "", watch.ill_formed_message(), "",
                       crash.detail, extra={"failing_pass": watch.ill_formed_after,
                                            "then": f"{crash.error_type}: {crash.message}"[:500],
                                            "then_site": crash.throw_site})
    kind = "verifier_build" if near_valid else "crash"
    if watch.current == SCHEDULE_PASS and steps:
        # tvmfuzz's own schedule step, not a TVM pass: name the s_tir primitive that raised
        # (the last step recorded) and the stage.
        return _fail("schedule", e, kind=kind, extra={"failing_step": steps[-1]})
    return _fail("build", e, kind=kind,
                 extra={"failing_pass": watch.current, "phase": watch.phase})


def finish(o: Outcome, t0: float, v: Variant, steps: list) -> Outcome:
    """Stamp an outcome of a Relax judge (program model or text) with its time, the variant it
    failed under and the schedule steps a "scheduled" variant applied."""
    o.seconds, o.target = time.perf_counter() - t0, v.label()
    o.extra.setdefault("variant", v.to_json())
    if steps:
        o.extra.setdefault("schedule", list(steps))
    return o


@contextlib.contextmanager
def _ops_marked():
    """While a module is constructed in a sandbox child, the op of each node is left as a
    breadcrumb: a segfault in an op's type inference names that op."""
    from fuzz import materialize as M

    M.on_node = (lambda op: breadcrumb.mark(op=op)) if breadcrumb.active() else None
    try:
        yield
    finally:
        M.on_node = None
        breadcrumb.mark(op=None)


def watch_kernels(vm) -> None:
    """In a sandbox child, leave the name of the function each VM call runs (a PrimFunc, a
    builtin) as a breadcrumb while it runs: a death by signal in the run stage then names the
    kernel it died in, which tells two segfaults of one module apart."""
    if not breadcrumb.active():
        return

    def instrument(func, symbol, before_run, ret_value, *args):
        breadcrumb.mark(kernel=str(symbol) if before_run else None)
        return 0

    try:
        vm.set_instrument(instrument)
    except Exception:  # noqa: BLE001 - a release or exec mode without instruments: no names
        pass


def _rerun(source, vm, args, v: Variant) -> list:
    """The loaded module run again on the same inputs: its outputs, flat."""
    return source.outputs(vm[source.entry](*source.vm_args(args, v)))


def _guilty_op(source, index: int, v: Variant, args, workdir) -> Optional[str]:
    """The numeric key (op:dtype) of the first value, in program order, that is wrong while
    the values it is computed from are right: the case rebuilt to return every value output
    ``index`` depends on (one more build, only for a finding), made into a module the way the
    case's was (``source.probe_module``: materialized, or for an ONNX or PyTorch case
    exported and imported by the same frontend path, so the values judged are the
    importer's). None when the source has no program model, the probe cannot be made (an op
    the exporter lacks, an import that fails), or it does not show the difference (built
    together, the ops fused differently)."""
    made = source.probe(index) if hasattr(source, "probe") else None
    if made is None:
        return None
    prog, names = made
    try:
        built = source.probe_module(prog, args)
        if built is None:
            return None
        mod, probe_args, expected = built
        ex = build(mod, v)
        vm = load_vm(ex, v, workdir)
        actual = reference.flatten(_to_numpy(vm[prog.entry](*source.vm_args(probe_args, v))))
    except Exception:  # noqa: BLE001 - a probe that cannot be made, built or run says nothing
        return None
    diff = reference.compare(prog, expected, actual)
    if diff is None or len(actual) != len(names):
        return None
    return reference.value_key(prog, names[diff[0]])


def _guilty_step(mod, source, v: Variant, args, expected, steps: list, workdir,
                 uninit: bool = False):
    """The schedule step whose prefix of ``steps`` first gives a wrong result (binary search:
    a few builds, only for a finding); None when even the whole schedule replayed gives the
    right one (the finding then depends on more than the steps). ``uninit``: the finding read
    memory nobody wrote, so a prefix that leaves memory unwritten may still read the right
    values by chance: its runs are also made with malloc's blocks filled (a loop_partition of
    a stack's loop was named by a later reorder of another function that way)."""
    from .schedule_steps import apply_schedule, guilty_step, vectorized_alloc
    from .uninit import differs_under_fills

    scheduled: dict = {}   # k -> the module the first k steps made, of each wrong prefix

    def wrong(k: int) -> bool:
        made = []

        def schedule(m):
            made.append(apply_schedule(m, steps[:k]))
            return made[-1]

        try:
            ex = build(mod, v, schedule=schedule)
            vm = load_vm(ex, v, workdir)
            def run():
                return _rerun(source, vm, args, v)

            def differs(out):
                return source.differs(expected, out)

            bad = bool(differs(run())) or (uninit and differs_under_fills(run, differs))
        except Exception:  # noqa: BLE001 - a prefix that does not build or run says nothing
            return False
        if bad:
            scheduled[k] = made[-1]
        return bad

    step = guilty_step(steps, wrong)
    if step is not None and step.get("prim") == "vectorize" and scheduled:
        # What the vectorized loop holds decides whether it is the known shared-lane defect
        # (fuzz.triage reads it): the module of the shortest wrong prefix, which ends with
        # the guilty step.
        step = dict(step, vectorized_alloc=vectorized_alloc(scheduled[min(scheduled)]))
    return step


def _record_schedule(steps: list) -> bool:
    """Add the steps the "scheduled" variant's build applied to ``steps``; False when one of
    them changes numerics by design (then its results are not compared)."""
    from . import tir_schedule as TS
    from .variants import LAST_SCHEDULE

    steps.extend(LAST_SCHEDULE)
    return TS.is_exact(list(LAST_SCHEDULE))


def well_formed_verdict(mod, near_valid: bool) -> tuple[bool, Optional[Outcome]]:
    """(well-formed?, the finding when a valid program is refused). A near-valid mutant may be
    ill-formed: that is recorded, and the build must then refuse it too."""
    from tvm import relax

    try:
        # Returns None when well-formed (0.27); raises, or returns False, when not.
        wf = relax.analysis.well_formed(mod) is not False
    except Exception as e:  # noqa: BLE001
        if not near_valid:
            return False, _fail("well_formed", e)
        wf = False
    if not wf and not near_valid:
        return False, Outcome("fail", "ill_formed", "well_formed", "", "the verifier rejects a "
                              "valid-by-construction program")
    return wf, None


def _tensor(a: np.ndarray, v: Variant):
    import tvm

    return compat.tensor(a, tvm.cuda(0) if v.kind == "cuda" else tvm.cpu())


def roundtrip_problem(mod, second_generation: bool = False) -> Optional[tuple]:
    """None when printing (show_meta=True) and parsing back gives a structurally equal module;
    else (error type, first line, detail). ``second_generation`` is for modules with explicit
    annotations that disagree with inference (near-valid mutants): the printer is not
    idempotent on those, so the parsed module is compared with its own reprint instead."""
    import re

    import tvm

    def changed(e) -> str:
        # Where the modules differ tells one printer bug from another (the values do not),
        # as for a PrimFunc alone (worker/tir_execute.py).
        m = re.search(r"caused by lhs at <root>(?:\.functions\[[^\]]*\])?\.(\S+?):?\s", str(e))
        return "print/parse round trip changes the module" + (f" at {m.group(1)}" if m else "")

    try:
        again = from_script(to_script(mod))
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip()
        lines = msg.splitlines() or [""]
        # The parser's first line is generic ("Program is not well-formed"); the line that
        # names the problem is its "Traceback:" one (as for a PrimFunc alone).
        why = next((ln.split(": ", 2)[-1] for ln in lines if ln.startswith("Traceback: ")),
                   lines[0])
        return (type(e).__name__, "printed module does not parse: " + why, msg[-2000:])
    try:
        tvm.ir.assert_structural_equal(mod, again, map_free_vars=True)
        return None
    except ValueError as first_gen:
        if not second_generation:
            return ("ValueError", changed(first_gen), str(first_gen)[-2000:])
        try:
            third = from_script(to_script(again))
            tvm.ir.assert_structural_equal(again, third, map_free_vars=True)
            return None
        except Exception as e:  # noqa: BLE001
            return ("ValueError", changed(e), f"{first_gen}\n{e}"[-2000:])


# Written into every Relax repro.py as they are (reducer/repro.py), with fuzz.materialize's
# to_script and from_script: a reproducer names the failing pass and checks the round trip
# with this code.
REPRO_CODE = (_pass_watch_class, _has_relax, pass_watch, roundtrip_problem, first_message_line,
              unbound_gpu_funcs, gpu_thread, host_code_message, planned_overlaps, _name,
              overlap_message, overlap_detail)
REPRO_CONSTANTS = ("_COMPILER_ERROR", "_GPU_THREAD")
