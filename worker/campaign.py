"""A local fuzz campaign (the embedded default): generate, run in N sandboxes, judge, keep every
finding, show progress, and resume after a stop.

Seeds are handed out in batches; each case's seed fixes its program and variants, so a case is
reproducible from its seed alone. Worker threads each drive one sandbox (a fork server
process): the threads only wait on pipes, so N threads give N cores of TVM work. Findings are
written by the main thread alone.
"""
from __future__ import annotations

import collections
import json
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from fuzz.choice import RandomChooser
from fuzz.coverage import COVERAGE_FILE, Coverage, coverage_line, load_coverage
from fuzz.generate import generate
from fuzz.outcome import Outcome

from fuzz.signature import bug_id, short
from .seeds import freeze_mutant
from .variants import BASE, GPU_KINDS, nvcc_available, random_variant

NEAR_VALID_SHARE = 0.15
BATCH = 8   # cases per sandbox child: amortizes the fork (see worker/sandbox.py)
TARGET_KINDS = ("llvm", "c", "cuda", "opencl", "webgpu")


def case_mode(seed: int, mode: Optional[str]) -> str:
    if mode:
        return mode
    return "near-valid" if random.Random(seed).random() < NEAR_VALID_SHARE else "valid"


def case_variants(seed: int, targets=TARGET_KINDS, alternatives: int = 1,
                  schedules: bool = False, ops: tuple = ()) -> list[dict]:
    """The base build plus random alternatives, deterministic from the case seed (and
    ``ops``, the program's: ``pattern_ops``)."""
    ch = RandomChooser(seed * 7919 + 17)
    out = [BASE.to_json()]
    # CUDA needs nvcc (the compile-only check of TVM's source); the other GPU kinds build
    # here with TVM alone.
    gpus = tuple(k for k in GPU_KINDS if k in targets and (k != "cuda" or nvcc_available()))
    for _ in range(alternatives * 4):
        if len(out) > alternatives:
            break
        v = random_variant(ch, schedules=schedules, gpus=gpus, ops=ops)
        if v.kind in targets:
            out.append(v.to_json())
    return out


TIR_SHARE = 0.35      # of cases, when a campaign fuzzes both Relax and TIR
ONNX_SHARE = 0.25     # of cases, when a campaign fuzzes ONNX models beside Relax
TORCH_SHARE = 0.2     # of cases, when a campaign fuzzes PyTorch modules beside Relax
SCHEDULE_SHARE = 0.6  # of TIR cases, when schedules are on


def case_ir(seed: int, ir=("relax",)) -> str:
    """The IR of a seed's case: TIR and ONNX take their shares, Relax the rest (without
    Relax, the others split the whole in proportion)."""
    if len(ir) == 1:
        return ir[0]
    shares = [(k, s) for k, s in (("tir", TIR_SHARE), ("onnx", ONNX_SHARE),
                                  ("torch", TORCH_SHARE)) if k in ir]
    if "relax" not in ir:
        total = sum(s for _, s in shares)
        shares = [(k, s / total) for k, s in shares]
    r, acc = random.Random(seed * 31 + 7).random(), 0.0
    for k, s in shares:
        acc += s
        if r < acc:
            return k
    return "relax"


def _imports_there(python: Optional[str], code: str) -> bool:
    import subprocess

    try:
        r = subprocess.run([python, "-c", code], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0


def available_irs(python: Optional[str] = None) -> tuple:
    """The IRs this installation can fuzz: onnx only where onnx and onnxruntime import, torch
    only where torch is installed (the ``tvmfuzz[torch]`` extra; found, not imported: importing
    it takes seconds), here and (``python``: another TVM's interpreter, whose sandbox judges the
    cases) there."""
    import importlib.util

    out = ["relax", "tir"]
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        if not python or _imports_there(python, "import onnx, onnxruntime"):
            out.append("onnx")
    except ImportError:
        pass
    if importlib.util.find_spec("torch") is not None and (
            not python or _imports_there(
                python, "import importlib.util, sys; "
                        "sys.exit(importlib.util.find_spec('torch') is None)")):
        out.append("torch")
    return tuple(out)


def make_case(seed: int, mode: Optional[str], targets=TARGET_KINDS, ir=("relax",),
              schedules: bool = False, features: Optional[dict] = None,
              seeds: Optional[list] = None, guide=None):
    """The case of a seed: its IR, program, compile variants and (TIR) schedule all follow
    from the seed, so a case is regenerated exactly from (seed, options). With ``seeds``
    (``worker.seeds``) and ``seeded`` in ``ir``, some or all cases mutate a seed module."""
    if seeds and "seeded" in ir:
        from .seeds import seeded_case, takes

        if takes(seed, ir):
            return seeded_case(seed, seeds)
        ir = tuple(i for i in ir if i != "seeded")
    chosen = case_ir(seed, ir)
    if chosen == "tir":
        return make_tir_case(seed, case_mode(seed, mode), schedules, features)
    if chosen == "onnx":
        return make_onnx_case(seed, targets, schedules, guide)
    if chosen == "torch":
        return make_torch_case(seed, targets, schedules)
    prog = generate(seed, mode=case_mode(seed, mode), guide=guide)
    prog.meta["variants"] = case_variants(seed, targets, schedules=schedules,
                                          ops=pattern_ops(prog))
    return prog


def pattern_ops(prog) -> tuple:
    """The entry function's catalogue ops as fusion pattern operands, ``OP@c`` where the
    second argument is a ``const`` node (``worker.variants.random_pass``), in program order."""
    from fuzz.catalogue import CATALOGUE

    nodes = list(prog.main.nodes())
    consts = {n.name for n in nodes if n.op == "const"}
    out: list[str] = []
    for n in nodes:
        if n.op in CATALOGUE:
            p = n.op + ("@c" if len(n.args) > 1 and n.args[1] in consts else "")
            if p not in out:
                out.append(p)
    return tuple(out)


ONNX_TRIES = 8   # programs drawn from the exportable ops until one exports at the opset
EXPOSE_SHARE = 0.3   # of ONNX cases whose every intermediate tensor is a graph output too


def onnx_options(seed: int) -> dict:
    """A seed's ONNX export and import options (fuzz.onnx_export.OnnxOptions)."""
    from fuzz.onnx_export import OPSETS

    rng = random.Random(seed * 7919 + 41)
    weights = rng.random() < 0.35
    return {"opset": rng.choice(OPSETS), "weights": weights,
            "weights_as_inputs": weights and rng.random() < 0.3,
            "dynamic": rng.random() < 0.2,
            "keep_params_in_input": rng.random() < 0.3, "shape_dict": rng.random() < 0.3,
            "shape_ops": rng.random() < 0.3, "scalar_gather": rng.random() < 0.5}


def _draw_exportable(seed: int, tries: int, ops, exportable, guide=None,
                     avoid_dtypes=()) -> tuple:
    """(program, attempt): valid programs of ``ops`` drawn from sub-seeds of ``seed`` until
    ``exportable(program)`` is None (it has a form in the frontend); after the last draw
    that one is kept, and its judge then says ``not_exportable``.

    Unguided, ``tries`` draws. A ``guide`` steers ``tries // 2`` draws first, then the
    unguided ``tries`` follow: the guide favours the (op, dtype) cells no case has covered,
    and many of those are cells the frontend cannot express (asin on float64, conv1d on int8
    in ONNX). Guided all eight times, 20 of 200 ONNX seeds had no form (5 unguided); this
    way a seed has none only where its unguided draws have none either."""
    draws = [(attempt, guide) for attempt in range(tries // 2)] if guide is not None else []
    draws += [(attempt, None) for attempt in range(tries)]
    for n, (attempt, steer) in enumerate(draws):
        prog = generate(seed * tries + attempt, mode="valid", ops=ops, guide=steer,
                        avoid_dtypes=avoid_dtypes)
        try:
            if exportable(prog) is None:
                break
        except Exception:  # noqa: BLE001 - the exporter's defect: the judge reports it
            break
    return prog, n


def make_onnx_case(seed: int, targets=TARGET_KINDS, schedules: bool = False, guide=None):
    """An ONNX case: a valid program of the ops the exporter has at the seed's opset
    (``ops_for``), drawn
    again (another sub-seed) until it exports at the seed's opset; after ONNX_TRIES draws the
    last one is kept, and its judge says ``not_exportable``."""
    from fuzz.model import OnnxProgram
    from fuzz.onnx_export import exportable, expose_values, ops_for

    options = onnx_options(seed)
    # ONNX Runtime has no bfloat16 kernels, so the exporter writes none: values are not
    # drawn bfloat16 (a cast to it still may be, and the program is drawn again)
    prog, attempt = _draw_exportable(seed, ONNX_TRIES, ops_for(options["opset"]),
                                     lambda p: exportable(p, options["opset"]), guide,
                                     avoid_dtypes=("bfloat16",))
    prog.meta.update(seed=seed, mode="valid", onnx_attempt=attempt)
    if random.Random(seed * 7919 + 43).random() < EXPOSE_SHARE:
        prog = expose_values(prog)   # every intermediate's imported type checked too
    prog = OnnxProgram.of(prog, options)
    prog.meta["variants"] = case_variants(seed, targets, schedules=schedules)
    return prog


TORCH_TRIES = 8   # programs drawn from the ops torch has until one has a torch form


def torch_options(seed: int) -> dict:
    """A seed's PyTorch export and import options (fuzz.torch_export.TorchOptions)."""
    rng = random.Random(seed * 7919 + 53)
    weights = rng.random() < 0.35
    return {"weights": weights, "dynamic": rng.random() < 0.25,
            "decompose": rng.random() < 0.5,
            "keep_params_as_input": weights and rng.random() < 0.5,
            "unwrap_unit_return_tuple": rng.random() < 0.3,
            "no_bind_return_tuple": rng.random() < 0.3,
            "run_ep_decomposition": rng.random() < 0.7}


def make_torch_case(seed: int, targets=TARGET_KINDS, schedules: bool = False):
    """A PyTorch case: a valid program of the ops torch has (``fuzz.torch_export``), drawn
    again (another sub-seed) until it has a torch form; after TORCH_TRIES draws the last one
    is kept, and its judge says ``not_exportable``."""
    from fuzz.model import TorchProgram
    from fuzz.torch_export import EXPORTABLE_OPS, exportable

    prog, attempt = _draw_exportable(seed, TORCH_TRIES, EXPORTABLE_OPS, exportable)
    prog.meta.update(seed=seed, mode="valid", torch_attempt=attempt)
    prog = TorchProgram.of(prog, torch_options(seed))
    prog.meta["variants"] = case_variants(seed, targets, schedules=schedules)
    return prog


def make_tir_case(seed: int, mode: str, schedules: bool, features: Optional[dict]):
    from fuzz.tir.generate import generate_tir

    from .tir_execute import random_tir_variant, tir_base_variant

    rng = random.Random(seed * 7919 + 29)
    prog = generate_tir(seed, mode="near_valid" if mode == "near-valid" else "valid",
                        features=features)
    prog.meta.update(seed=seed, mode=mode)
    prog.meta["variants"] = [tir_base_variant().to_json(), random_tir_variant(rng).to_json()]
    if schedules and rng.random() < SCHEDULE_SHARE:
        # Drawn in the sandbox (it needs TVM); a finding's steps are frozen by freeze_schedule.
        prog.meta["schedule"] = {"seed": seed, "steps": rng.randint(1, 8)}
    return prog


def _worth_reducing(prog, outcome: Outcome) -> bool:
    """Only a new bug's bucket is reduced in the background: a known bug or a mutant's
    expected refusal needs no report (``tvmfuzz reduce`` still reduces one on request)."""
    from fuzz.triage import NEW, auto_status

    return auto_status(prog, outcome)[0] == NEW


def freeze_schedule(prog, outcome: Outcome) -> None:
    """Replace a case's random-schedule seed by the steps it applied, so replays, reductions
    and other TVM releases apply exactly those steps."""
    sched = prog.meta.get("schedule")
    if sched and "applied" not in sched:
        steps = outcome.extra.get("schedule")
        if steps is not None:
            prog.meta["schedule"] = {"applied": steps, "seed": sched.get("seed")}


def release_features(python: Optional[str] = None) -> dict:
    """What the generator may use on the TVM release under ``python`` (default: this one),
    asked of that release by feature (fuzz.compat.release_features) in a short-lived process,
    so the coordinator never imports TVM; {} when it cannot tell."""
    import subprocess
    import sys

    from .sandbox import ROOT

    code = "import json; from fuzz.compat import release_features as f; print(json.dumps(f()))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        r = subprocess.run([python or sys.executable, "-c", code], capture_output=True,
                           text=True, timeout=120, env=env)
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {}


def reproduction(runner, prog, outcome: Outcome, replays: int, stop=None) -> dict:
    """Replay a failing case so the finding carries how reliably it reproduces (its
    ``Outcome.reproduction``)."""
    sig = outcome.signature
    same = ran = 1
    for _ in range(replays - 1):
        if stop is not None and stop.is_set():
            break   # the campaign's time is up: a hang's replays would cost a timeout each
        ran += 1
        same += runner(prog).signature == sig
    return {"reproduced": same, "replays": ran, "rate": round(same / ran, 3)}


def save_case(out_dir: Path, prog, outcome: Outcome, script: str) -> Path:
    """Write a failing case as JSON (canonical), TVMScript (for people) and its outcome
    (``to_json()``, with ``script_error`` where the case could not be printed)."""
    from .sandbox_runner import ScriptFailure

    kind = outcome.kind or "unknown"
    d = out_dir / "findings" / kind
    d.mkdir(parents=True, exist_ok=True)
    stem = d / f"case_{prog.meta.get('seed', 0):06d}"
    _write(stem.with_suffix(".json"), prog.dumps())
    record = outcome.to_json()
    if isinstance(script, ScriptFailure):
        record["script_error"] = str(script)
    else:
        _write(stem.with_suffix(".py"), script)
    _write(stem.with_suffix(".outcome.json"), json.dumps(record, indent=1))
    return stem


def _write(path: Path, text: str) -> None:
    """Atomic: a killed campaign leaves the old file or the new one, never half of one."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


# --- seeds --------------------------------------------------------------------------------
class SeedPlan:
    """Hands out seed batches and knows the watermark: every seed below it is done, so a
    resumed campaign starts there (a few cases after it may run twice; none is skipped)."""

    def __init__(self, start: int, batch: int):
        self.next = start
        self.batch = batch
        self.pending: set[int] = set()
        self.lock = threading.Lock()

    def take(self) -> list[int]:
        with self.lock:
            seeds = list(range(self.next, self.next + self.batch))
            self.next += self.batch
            self.pending.add(seeds[0])
            return seeds

    def done(self, first: int) -> None:
        with self.lock:
            self.pending.discard(first)

    def watermark(self) -> int:
        with self.lock:
            return min(self.pending) if self.pending else self.next


# --- statistics ---------------------------------------------------------------------------
@dataclass
class Stats:
    started: float = field(default_factory=time.monotonic)
    verdicts: collections.Counter = field(default_factory=collections.Counter)
    kinds: collections.Counter = field(default_factory=collections.Counter)
    signatures: dict = field(default_factory=dict)     # signature -> [count, first seed]
    ops: set = field(default_factory=set)
    catalogue_size: int = 0
    irs: collections.Counter = field(default_factory=collections.Counter)
    ir_seconds: collections.Counter = field(default_factory=collections.Counter)   # judge time
    # findings by the case's kind (IR) and the stage that failed ("torch import")
    ir_stages: collections.Counter = field(default_factory=collections.Counter)
    # schedule primitive -> [cases it was applied in, of which findings]
    primitives: dict = field(default_factory=dict)
    # GPU target kind, and dlight rule -> [cases built for it, findings its variant made]
    gpu_targets: dict = field(default_factory=dict)
    dlight_rules: dict = field(default_factory=dict)
    # bug id -> {"key", "count", "first_seed", "signatures": {signature: (status, reason)}}
    bugs: dict = field(default_factory=dict)
    user_verdicts: dict = field(default_factory=dict)   # `tvmfuzz triage`'s, by bug id
    # invalid near-valid mutants: TVM refused to construct them (an edge attribute out of
    # range, an annotation inference rejects), which is the refusal intended, not a defect
    refused_mutants: int = 0
    # invalid ONNX cases whose program has no ONNX form at the case's opset, PyTorch cases
    # whose program has no torch form (not_exportable)
    not_exportable: int = 0
    # invalid PyTorch cases eager torch or torch.export refuses, or where eager torch is not
    # numpy (torch_rejected, torch_disagrees): the export's limits, not TVM's
    torch_refused: int = 0
    # fuzz/coverage.py's cells, with the findings among their cases: the one record of them
    # (OUT/coverage.json; the guide, the summary and report.html's heat maps read it)
    coverage: Coverage = field(default_factory=Coverage)

    def add(self, prog, outcome: Outcome) -> None:
        v = outcome.verdict
        self.verdicts[v] += 1
        mutant = prog.meta.get("mode") == "near-valid"
        self.refused_mutants += v == "invalid" and mutant
        self.not_exportable += v == "invalid" and not mutant and outcome.kind == "not_exportable"
        self.torch_refused += v == "invalid" and outcome.kind in ("torch_rejected",
                                                                  "torch_disagrees")
        self.irs[prog.ir] += 1
        self.ir_seconds[prog.ir] += float(outcome.seconds or 0.0)
        self.ops.update(prog.ops())
        self.coverage.add_case(prog, outcome)
        outcome.extra.pop("tvm_python", None)   # counted; too long to keep with a finding
        steps = outcome.extra.get("schedule") or []
        for prim in sorted({s.get("prim", "?") for s in steps}):
            entry = self.primitives.setdefault(prim, [0, 0])
            entry[0] += 1
            entry[1] += v == "fail"
        self._count_gpu(prog, outcome)
        if v == "fail":
            self.kinds[outcome.kind] += 1
            self.ir_stages[f"{prog.ir} {outcome.stage or outcome.kind}"] += 1
            sig = outcome.signature
            entry = self.signatures.setdefault(sig, [0, prog.meta.get("seed")])
            entry[0] += 1
            from fuzz.triage import auto_status, root_key

            key = root_key(prog, outcome)
            now = time.time()
            bug = self.bugs.setdefault(bug_id(key), {
                "key": key, "count": 0, "first_seed": prog.meta.get("seed"),
                "signatures": {}, "kind": outcome.kind, "stage": outcome.stage,
                "first_at": now, "reproduced": 0, "replays": 0})
            bug["count"] += 1
            bug["last_at"] = now
            rep = outcome.reproduction or {}
            bug["reproduced"] += rep.get("reproduced", 0)
            bug["replays"] += rep.get("replays", 0)
            if sig not in bug["signatures"]:   # the status of a signature's first finding
                bug["signatures"][sig] = auto_status(prog, outcome)

    def _count_gpu(self, prog, outcome: Outcome) -> None:
        """Cases per GPU target and dlight rule, and the findings their variant made."""
        from .variants import GPU_KINDS

        failed = outcome.extra.get("variant") if outcome.verdict == "fail" else None
        for var in prog.meta.get("variants") or []:
            kind = (var.get("target") or {}).get("kind", "llvm")
            if kind not in GPU_KINDS:
                continue
            hit = failed == var
            entry = self.gpu_targets.setdefault(kind, [0, 0])
            entry[0] += 1
            entry[1] += hit
            for rule in var.get("dlight") or (["(target pipeline)"]
                                              if var.get("pipeline") == "target" else []):
                entry = self.dlight_rules.setdefault(rule, [0, 0])
                entry[0] += 1
                entry[1] += hit

    def bug_list(self) -> list[dict]:
        """The bugs met, new first, then known, then expected; the most frequent first."""
        from fuzz.triage import ORDER, combine

        out = []
        for bid, b in self.bugs.items():
            status, why = combine(b["signatures"].values(), self.user_verdicts.get(bid))
            out.append({"id": bid, "key": b["key"], "status": status, "reason": why,
                        "count": b["count"], "signatures": len(b["signatures"]),
                        "first_seed": b["first_seed"], "kind": b.get("kind"),
                        "stage": b.get("stage"), "first_at": b.get("first_at"),
                        "last_at": b.get("last_at"), "reproduced": b.get("reproduced", 0),
                        "replays": b.get("replays", 0)})
        return sorted(out, key=lambda g: (ORDER.get(g["status"], 0), -g["count"], g["id"]))

    @property
    def cases(self) -> int:
        return sum(self.verdicts.values())

    def snapshot(self) -> dict:
        t = time.monotonic() - self.started
        n = self.cases
        return {"t": round(t, 1), "at": round(time.time(), 1), "cases": n,
                "cases_per_s": round(n / t, 2) if t else 0.0,
                "verdicts": dict(self.verdicts), "findings_by_kind": dict(self.kinds),
                "unique_signatures": len(self.signatures),
                "unique_bugs": len(self.bugs),
                "new_bugs": sum(g["status"] == "new" for g in self.bug_list()),
                "validity": round(1 - self.verdicts["invalid"] / n, 4) if n else 1.0,
                "refused_mutants": self.refused_mutants,
                "not_exportable": self.not_exportable,
                "op_coverage": f"{len(self.ops)}/{self.catalogue_size}",
                "coverage": self.coverage.totals(),
                "cases_by_ir": dict(self.irs),
                # each kind's cases per second of judging time in its sandboxes (the same
                # machine and run for every kind: comparable with each other)
                "judged_per_s_by_ir": {k: round(n / self.ir_seconds[k], 2)
                                       for k, n in sorted(self.irs.items())
                                       if self.ir_seconds[k] > 0},
                "findings_by_ir_stage": dict(sorted(self.ir_stages.items())),
                "torch_refused": self.torch_refused,
                "schedule_primitives": {p: {"cases": c, "findings": f}
                                        for p, (c, f) in sorted(self.primitives.items())},
                "gpu_targets": {k: {"cases": c, "findings": f}
                                for k, (c, f) in sorted(self.gpu_targets.items())},
                "dlight_rules": {k: {"cases": c, "findings": f}
                                 for k, (c, f) in sorted(self.dlight_rules.items())}}


class Display:
    """Live table on a terminal (rich); plain periodic lines elsewhere (CI logs, pipes)."""

    def __init__(self, echo: Callable[[str], None], live: Optional[bool] = None,
                 every: float = 10.0):
        import sys

        self.echo = echo
        self.live = sys.stdout.isatty() if live is None else live
        self.every = every
        self.last = 0.0
        self._live = None
        if self.live:
            from rich.live import Live

            self._live = Live(refresh_per_second=2, transient=False)
            self._live.start()

    def update(self, snap: dict, force: bool = False) -> None:
        if self._live is not None:
            self._live.update(self._table(snap))
            return
        now = time.monotonic()
        if force or now - self.last >= self.every:
            self.last = now
            kinds = ", ".join(f"{k} {c}" for k, c in sorted(snap["findings_by_kind"].items()))
            irs = snap.get("cases_by_ir") or {}
            by_ir = (" [" + ", ".join(f"{k} {n}" for k, n in sorted(irs.items())) + "]"
                     if len(irs) > 1 else "")
            self.echo(f"[{snap['t']:6.0f}s] {snap['cases']} cases{by_ir} "
                      f"({snap['cases_per_s']}/s), "
                      f"findings: {kinds or 'none'}; {snap['unique_signatures']} signatures, "
                      f"{snap['unique_bugs']} bugs ({snap['new_bugs']} new), validity {100 * snap['validity']:.1f}%, ops {snap['op_coverage']}"
                      f"; coverage: {coverage_line(snap)}")

    def _table(self, snap: dict):
        from rich.table import Table

        t = Table(title="tvmfuzz campaign", show_header=False)
        t.add_row("elapsed", f"{snap['t']:.0f} s")
        t.add_row("cases", f"{snap['cases']} ({snap['cases_per_s']}/s)")
        if len(snap.get("cases_by_ir") or {}) > 1:
            t.add_row("cases by IR", ", ".join(
                f"{k} {n}" for k, n in sorted(snap["cases_by_ir"].items())))
        t.add_row("verdicts", ", ".join(f"{k} {v}" for k, v in sorted(snap["verdicts"].items())))
        t.add_row("findings by kind", ", ".join(
            f"{k} {v}" for k, v in sorted(snap["findings_by_kind"].items())) or "none")
        if snap.get("findings_by_ir_stage"):
            t.add_row("findings by IR, stage", ", ".join(
                f"{k} {v}" for k, v in snap["findings_by_ir_stage"].items()))
        if len(snap.get("judged_per_s_by_ir") or {}) > 1:
            t.add_row("judged cases/s by IR", ", ".join(
                f"{k} {v}" for k, v in snap["judged_per_s_by_ir"].items()))
        t.add_row("unique signatures", str(snap["unique_signatures"]))
        t.add_row("bugs", f"{snap['unique_bugs']} ({snap['new_bugs']} new)")
        t.add_row("validity", f"{100 * snap['validity']:.1f}%")
        t.add_row("op coverage", snap["op_coverage"])
        t.add_row("coverage", coverage_line(snap))
        return t

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()


# --- the campaign -------------------------------------------------------------------------
@dataclass
class CampaignConfig:
    budget_s: float
    out_dir: Path
    seed: int = 0
    mode: Optional[str] = None
    jobs: int = 1
    targets: tuple = TARGET_KINDS
    replays: int = 3
    tvm_python: Optional[str] = None
    resume: bool = False
    live: Optional[bool] = None
    corpus: Optional[Path] = None
    # Makes the background reducer of new buckets: (out_dir, echo, tvm_python) -> an object
    # with submit(bucket, prog, signature) and close() -> waiting buckets; the command line
    # passes reducer.autoreduce.AutoReducer (this layer does not import the reducer). None: off.
    reduce: Optional[Callable] = None
    ir: tuple = ("relax",)       # which IRs to generate: relax, tir, seeded (needs seeds)
    schedules: bool = False      # random s_tir schedules on TIR cases
    features: dict = field(default_factory=dict)   # release features (release_features)
    seeds: Optional[list] = None  # worker.seeds.Seed list (tvmfuzz run --seeds)
    seeds_dir: Optional[str] = None   # where they came from (kept for --resume)
    # Writes OUT/report.html from the campaign's files: (out_dir, live) -> None; the command
    # line passes tvmfuzz.html_report.write_campaign_html (this layer does not import it).
    # Called every html_every seconds (live: the page reloads itself) and once at the end.
    html: Optional[Callable] = None
    html_every: float = 30.0
    guidance: bool = True        # generation favours cells and edges not yet covered
    # the campaign's Coverage when guidance is on (the Recorder's): worker threads read its
    # ``current`` snapshot
    coverage: Optional[Coverage] = None


def _worker(cfg: CampaignConfig, plan: SeedPlan, results: queue.Queue, stop: threading.Event,
            make_runner) -> None:
    runner = make_runner()
    try:
        while not stop.is_set():
            seeds = plan.take()
            guide = cfg.coverage.current if cfg.coverage is not None else None
            progs = [make_case(s, cfg.mode, cfg.targets, cfg.ir, cfg.schedules, cfg.features,
                               cfg.seeds, guide) for s in seeds]
            outcomes = runner.run_many(progs)
            for prog, outcome in zip(progs, outcomes):
                # Replays draw the same schedule from the case seed; Recorder.record freezes
                # the applied steps into the case it saves.
                if outcome.verdict == "fail" and cfg.replays > 1:
                    outcome.reproduction = reproduction(runner, prog, outcome, cfg.replays,
                                                        stop)
            scripts = runner.scripts([p for p, o in zip(progs, outcomes)
                                      if o.verdict in ("fail", "invalid")])
            results.put((seeds[0], progs, outcomes, iter(scripts)))
    except Exception as e:  # noqa: BLE001 - reported by the main thread, never swallowed
        results.put(("error", e))
    finally:
        runner.close()


def _load_state(out_dir: Path) -> dict:
    try:
        return json.loads((out_dir / "campaign.json").read_text())
    except (OSError, ValueError):
        return {}


# --- keeping results (shared with the distributed coordinator, worker/distributed.py) -----
def open_campaign(cfg: CampaignConfig, echo: Callable[[str], None]):
    """Resume state, first seed, corpus store and versions, before any work: a corpus that
    cannot be written fails here (CorpusError). ``cfg.mode`` becomes the resumed one."""
    from corpus.store import Corpus, versions

    state = _load_state(cfg.out_dir) if cfg.resume else {}
    start = state.get("watermark", cfg.seed)
    if cfg.resume and state:
        cfg.mode = state.get("mode", cfg.mode)
        echo(f"resuming campaign in {cfg.out_dir} at seed {start} "
             f"({state.get('cases', 0)} cases done before)")
    store = Corpus(cfg.corpus) if cfg.corpus is not None else None
    vers = versions()
    if cfg.tvm_python:
        vers["tvm"] = _tvm_version_of(cfg.tvm_python)
    if cfg.resume and state:
        cfg.ir = tuple(state.get("ir", cfg.ir))
        cfg.schedules = state.get("schedules", cfg.schedules)
    cfg.features = release_features(cfg.tvm_python)
    return state, start, store, vers


class Recorder:
    """Keeps each finished batch: statistics, findings/ files, corpus buckets, the watermark in
    campaign.json, a stats.jsonl line and the display. Called from one thread only."""

    def __init__(self, cfg: CampaignConfig, state: dict, store, vers: dict,
                 echo: Callable[[str], None]):
        from fuzz.catalogue import CATALOGUE

        self.cfg, self.state, self.store, self.vers, self.echo = cfg, state, store, vers, echo
        self.stats = Stats(catalogue_size=len(CATALOGUE))
        if cfg.resume:
            self.stats.coverage = load_coverage(cfg.out_dir)
        cfg.coverage = self.stats.coverage if cfg.guidance else None
        if store is not None:
            self.stats.user_verdicts = store.verdicts()   # they count in the summary too
        self.display = Display(echo, cfg.live)
        self.stats_file = (cfg.out_dir / "stats.jsonl").open("a")
        self.extra_state: dict = {}   # more keys for campaign.json (the distributed reply list)
        self.reducer = None
        if cfg.reduce is not None and store is not None:
            self.reducer = cfg.reduce(cfg.out_dir, echo, cfg.tvm_python)
        self.buckets: dict = {}    # (signature, bug id) -> corpus bucket (report.json's links)
        # a resumed campaign's report.json goes on from the one before (Stats start at zero)
        self.report_before: dict = {}
        if cfg.resume:
            try:
                self.report_before = json.loads((cfg.out_dir / "report.json").read_text())
            except (OSError, ValueError):
                pass
        self.html_at = time.monotonic()
        self.html_thread: Optional[threading.Thread] = None

    def record(self, plan: SeedPlan, first: int, progs, outcomes: list[Outcome], scripts,
               tvm_version: Optional[str] = None) -> None:
        """``scripts``: one per case whose verdict is fail or invalid, in order."""
        scripts = iter(scripts)
        for prog, outcome in zip(progs, outcomes):
            self.stats.add(prog, outcome)
            if outcome.verdict in ("fail", "invalid"):
                script = next(scripts)
                freeze_schedule(prog, outcome)
                freeze_mutant(prog, outcome, script)
                save_case(self.cfg.out_dir, prog, outcome, script)
                if self.store is not None and outcome.verdict == "fail":
                    bucket, new = self.store.add_finding(
                        prog, outcome, script, tvm_version=tvm_version or self.vers["tvm"],
                        tvmfuzz_version=self.vers["tvmfuzz"])
                    from fuzz.triage import root_key

                    self.buckets[outcome.signature, bug_id(root_key(prog, outcome))] = bucket
                    if new and not self.display.live:
                        self.echo(f"new bucket {bucket}: {short(outcome.signature)}")
                    if new and self.reducer is not None and _worth_reducing(prog, outcome):
                        self.reducer.submit(bucket, prog, outcome.signature)
        plan.done(first)
        self.checkpoint(plan)

    def checkpoint(self, plan: SeedPlan, force: bool = False) -> None:
        _save_state(self.cfg.out_dir, plan, self.stats, self.cfg, self.state, self.extra_state)
        _write(self.cfg.out_dir / COVERAGE_FILE, json.dumps(self.stats.coverage.to_json()))
        self.stats.coverage.refresh()   # the next batches' guide
        snap = self.stats.snapshot()
        self.stats_file.write(json.dumps(snap) + "\n")
        self.stats_file.flush()
        self.display.update(snap, force)
        if self.cfg.html is not None and time.monotonic() - self.html_at >= self.cfg.html_every:
            self.write_report(live=True)

    def write_report(self, live: bool) -> None:
        """report.json (the bugs with their buckets, which stats.jsonl does not hold) and
        report.html from it, coverage.json and the other files. A report that cannot be
        written is said once per attempt and never stops the campaign."""
        self.html_at = time.monotonic()
        st = self.stats
        bugs = st.bug_list()
        for g in bugs:
            g["buckets"] = [{"signature": sig, "bucket": self.buckets.get((sig, g["id"]))}
                            for sig in st.bugs[g["id"]]["signatures"]]
        _write(self.cfg.out_dir / "report.json", json.dumps(_merge_report(self.report_before, {
            "at": round(time.time(), 1), "tvm": self.vers.get("tvm"), "bugs": bugs})))
        if self.cfg.html is None:
            return
        if self.html_thread is not None:
            if live and self.html_thread.is_alive():
                return           # the last page is still being drawn: skip this refresh
            self.html_thread.join()
        if live:     # drawn beside the campaign (a 24-hour page takes a second or two)
            self.html_thread = threading.Thread(target=self._html, args=(True,), daemon=True)
            self.html_thread.start()
        else:
            self._html(False)

    def _html(self, live: bool) -> None:
        try:
            self.cfg.html(self.cfg.out_dir, live=live)
        except Exception as e:  # noqa: BLE001 - the report is a view; the campaign goes on
            self.echo(f"report.html not written: {type(e).__name__}: {e}")

    def close(self) -> None:
        self.display.close()
        self.stats_file.close()
        if self.reducer is not None:
            waiting = self.reducer.close()
            if waiting:
                self.echo(f"{len(waiting)} new buckets not reduced yet (`tvmfuzz reduce BUCKET`):"
                          f" {' '.join(waiting[:20])}")
        self.write_report(live=False)    # after the reductions: the page links their results
        if self.store is not None:
            self.store.close()


def _merge_report(before: dict, now: dict) -> dict:
    """report.json of a resumed campaign: the bugs of the runs before plus this run's (counts
    added; a bug's first and last times widened, its status this run's). The coverage cells go
    on in coverage.json, which a resumed campaign loads (Recorder); report.json keeps none."""
    if not before:
        return now
    out = dict(now)
    bugs = {g["id"]: dict(g) for g in before.get("bugs") or []}
    for g in now["bugs"]:
        old = bugs.get(g["id"])
        if old is None:
            bugs[g["id"]] = g
            continue
        merged = dict(g)
        for k in ("count", "reproduced", "replays"):
            merged[k] = (old.get(k) or 0) + (g.get(k) or 0)
        merged["first_at"] = min(t for t in (old.get("first_at"), g.get("first_at")) if t)
        merged["first_seed"] = old.get("first_seed", g.get("first_seed"))
        known = {b["signature"]: b for b in old.get("buckets") or []}
        for b in g.get("buckets") or []:
            if b.get("bucket") or b["signature"] not in known:
                known[b["signature"]] = b
        merged["buckets"] = list(known.values())
        merged["signatures"] = len(merged["buckets"])
        bugs[g["id"]] = merged
    from fuzz.triage import ORDER

    out["bugs"] = sorted(bugs.values(), key=lambda g: (ORDER.get(g.get("status"), 0),
                                                      -g.get("count", 0), g["id"]))
    return out


def run_campaign(budget_s: float, out_dir: Path, seed: int = 0, mode: Optional[str] = None,
                 echo: Callable[[str], None] = print, runner=None, replays: int = 3,
                 tvm_python: Optional[str] = None, jobs: int = 1, targets=TARGET_KINDS,
                 resume: bool = False, live: Optional[bool] = None,
                 corpus: Optional[Path] = None, reduce: Optional[Callable] = None,
                 ir=("relax",),
                 schedules: bool = False, seeds: Optional[list] = None,
                 seeds_dir: Optional[str] = None, html: Optional[Callable] = None,
                 html_every: float = 30.0, guidance: bool = True,
                 py_coverage: bool = False) -> dict:
    cfg = CampaignConfig(budget_s, out_dir, seed, mode, jobs, tuple(targets), replays,
                         tvm_python, resume, live, corpus, reduce, tuple(ir), schedules,
                         seeds=seeds, seeds_dir=seeds_dir, html=html, html_every=html_every,
                         guidance=guidance)
    from .sandbox_runner import SandboxRunner

    if py_coverage:   # the sandboxes trace TVM's Python functions (worker/pycoverage.py)
        from .pycoverage import ENV

        os.environ[ENV] = "1"

    def make_runner():
        if runner is not None:
            return runner
        return SandboxRunner(python=tvm_python) if tvm_python else SandboxRunner()

    state, start, store, vers = open_campaign(cfg, echo)
    plan = SeedPlan(start, BATCH)
    rec = Recorder(cfg, state, store, vers, echo)
    results: queue.Queue = queue.Queue()
    stop = threading.Event()
    threads = [threading.Thread(target=_worker, args=(cfg, plan, results, stop, make_runner),
                                daemon=True) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    error = None
    try:
        while any(t.is_alive() for t in threads) or not results.empty():
            if time.monotonic() - t0 >= budget_s:
                stop.set()
            try:
                item = results.get(timeout=0.5)
            except queue.Empty:
                continue
            if item[0] == "error":
                error = item[1]
                stop.set()
                continue
            first, progs, outcomes, scripts = item
            rec.record(plan, first, progs, outcomes, scripts)
    except KeyboardInterrupt:
        stop.set()
        echo("interrupted: finishing the cases in flight (Ctrl-C again to abandon them)")
        for t in threads:
            t.join()
    finally:
        rec.close()
    if error is not None:
        raise error
    return _summarize(out_dir, rec.stats, plan, start, echo)


def _tvm_version_of(python: str) -> str:
    import subprocess

    r = subprocess.run([python, "-c", "from importlib.metadata import version as v;"
                        "print(v('apache-tvm'))"], capture_output=True, text=True, timeout=60)
    return r.stdout.strip() or "unknown"


def _save_state(out_dir: Path, plan: SeedPlan, stats: Stats, cfg: CampaignConfig,
                before: dict, extra: Optional[dict] = None) -> None:
    _write(out_dir / "campaign.json", json.dumps({
        "watermark": plan.watermark(), "mode": cfg.mode, "ir": list(cfg.ir),
        "schedules": cfg.schedules, "guidance": cfg.guidance, **({"seeds": cfg.seeds_dir} if cfg.seeds_dir else {}),
        "cases": before.get("cases", 0) + stats.cases, **(extra or {})}))


def _summarize(out_dir: Path, stats: Stats, plan: SeedPlan, start: int, echo,
               extra: Optional[dict] = None) -> dict:
    snap = stats.snapshot()
    bugs = stats.bug_list()
    summary = dict(snap, **(extra or {}), seeds=[start, plan.next - 1], signatures=[
        {"signature": s, "count": c, "first_seed": first}
        for s, (c, first) in sorted(stats.signatures.items(), key=lambda kv: -kv[1][0])],
        bugs=bugs)
    _write(out_dir / "summary.json", json.dumps(summary, indent=1))
    v = stats.verdicts
    echo(f"{stats.cases} cases in {snap['t']:.0f}s ({snap['cases_per_s']}/s): pass {v['pass']}, "
         f"fail {v['fail']}, invalid {v['invalid']} (generator defects "
         f"{v['invalid'] - stats.refused_mutants - stats.not_exportable - stats.torch_refused}"
         f", near-valid mutants "
         f"TVM refused to construct {stats.refused_mutants}"
         + (f", ONNX or PyTorch cases with no form there {stats.not_exportable}"
            if stats.not_exportable else "")
         + (f", PyTorch modules eager torch or torch.export refuse {stats.torch_refused}"
            if stats.torch_refused else "") + "), "
         f"rejected (mutants both verifier and build refuse) {v['rejected']}")
    echo(f"coverage: {coverage_line(snap)} (cells by kind in {out_dir / COVERAGE_FILE})")
    if len(stats.irs) > 1 or set(stats.irs) - {"relax"}:
        rates = snap.get("judged_per_s_by_ir") or {}
        echo("cases by IR: " + ", ".join(
            f"{k} {n}" + (f" ({rates[k]}/s judged)" if k in rates else "")
            for k, n in sorted(stats.irs.items())))
        if stats.ir_stages:
            echo("findings by IR and stage: " + ", ".join(
                f"{k} {n}" for k, n in sorted(stats.ir_stages.items())))
    if stats.primitives:
        echo("schedule primitives (cases applied in, findings among them):")
        for p, (c, f) in sorted(stats.primitives.items(), key=lambda kv: -kv[1][0]):
            echo(f"  {p:24s} {c:5d}  {f:4d}")
    for title, table in (("GPU targets, compile-only (cases built for, findings)",
                          stats.gpu_targets),
                         ("dlight rules (cases built with, findings)", stats.dlight_rules)):
        if table:
            echo(title + ":")
            for k, (c, f) in sorted(table.items(), key=lambda kv: -kv[1][0]):
                echo(f"  {k:24s} {c:5d}  {f:4d}")
    if bugs:
        from fuzz.triage import STATUSES

        counts = ", ".join(f"{sum(g['status'] == st for g in bugs)} {st}" for st in STATUSES)
        echo(f"{len(bugs)} bugs ({counts}), new first (status, count, bug, key, signatures, "
             "first seed):")
        for g in bugs:
            echo(f"  {'NEW' if g['status'] == 'new' else g['status']:8s} {g['count']:4d}  "
                 f"{g['id']}  {short(g['key'], 160)}  ({g['signatures']} signatures, "
                 f"seed {g['first_seed']})")
            if g["status"] != "new":
                echo(f"  {'':8s} {'':4s}  {short(g['reason'], 172)}")
    if stats.signatures:
        echo(f"{len(stats.signatures)} distinct failures (count, signature, first seed):")
        for s in summary["signatures"]:
            echo(f"  {s['count']:4d}  {short(s['signature'], 200)}  (seed {s['first_seed']})")
        echo(f"cases saved under {out_dir / 'findings'}; replay one with "
             f"`tvmfuzz replay {out_dir / 'findings'}/<kind>/case_<seed>.json`; "
             "`tvmfuzz findings` lists the corpus's bugs (`--buckets`: its buckets)")
    return summary
