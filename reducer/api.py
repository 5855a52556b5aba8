"""Reduce a failing case (program model) or a TVMScript file to a minimal reproducer.

``reduce_case(program, ...)`` and ``reduce_script(text, ...)`` are the entry points; anything
that yields a program (a stored case, a corpus bucket's representative) goes through
``reduce_case``. Both first replay the input three times in the sandbox and refuse to start on
an input that passes, does not parse, or fails with an unstable signature; then they run the
delta passes through ``ddmin.Driver``, writing the best candidate so far after every
accepted step, and finish with ``case.json``/``case.py``, ``repro.py`` and ``report.md``.
"""
from __future__ import annotations

import collections
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from fuzz.model import Program
from fuzz.outcome import Outcome
from worker.script_guard import comment_imports, user_script_problem
from worker.user_input import InputError, case_problem, read_input

from .ddmin import Cancelled, Driver
from .oracle import CaseSubject, Oracle, ScriptSubject, sha256
from .output import PARTIAL, OutDir
from .passes import registry
from .passes.model import size as MS
from .passes.model.context import ModelContext
from .pool import SandboxPool
from .size import script_bindings, script_smaller, script_structure
from .split import SPLIT_FROM, Split, message_names

REPLAYS = 3


class ReduceError(Exception):
    """The input cannot be reduced; the message says why, for the user."""


@dataclass
class Reduction:
    kind: str                       # "case" or "script"
    original: Any
    reduced: Any
    signature: str
    outcome: Outcome                # the reduced input's, with its reproduction
    script: str                     # reduced TVMScript ("" when it could not be printed)
    stats: dict = field(default_factory=dict)
    slippage: dict = field(default_factory=dict)   # signature -> directory it was saved in
    out_dir: Optional[Path] = None
    writer: Any = None              # the OutDir this run writes through
    # For repro.py: "module_json" (the module itself, where its printout does not parse back
    # to it), "schedule_traces" (the schedule a "scheduled" variant applied, as TVM's trace)
    repro: dict = field(default_factory=dict)

    def stats_json(self) -> str:
        """reduce.json: how the reduction went."""
        return json.dumps({"kind": self.kind, "signature": self.signature, **self.stats,
                           "slippage_saved": self.slippage}, indent=1, default=str)


# --- inputs ---------------------------------------------------------------------------------
def load_input(spec: str, corpus_dir: Optional[Path] = None) -> tuple[str, Any, str]:
    """("case", Program, name) or ("script", text, name) for a path or a corpus bucket id
    (its representative case)."""
    path = Path(spec)
    if not path.exists():
        return ("case", _bucket_case(spec, corpus_dir), f"bucket-{spec}")
    try:
        kind, value = read_input(path)
    except InputError as e:
        raise ReduceError(str(e))
    return (kind, value, path.name.split(".")[0] or "case")


def _bucket_case(bucket_id: str, corpus_dir: Optional[Path]) -> Program:
    """The representative case of a corpus bucket (an id or a unique prefix of one)."""
    from corpus import CorpusError, representative

    try:
        prog = Program.from_json(representative(bucket_id, corpus_dir)["case"])
    except CorpusError as e:
        raise ReduceError(str(e))
    problem = case_problem(prog)
    if problem:
        raise ReduceError(f"bucket {bucket_id} refused: {problem}")
    return prog


def check_user_script(text: str, where: str = "input") -> None:
    """Refuse text that is not Python or uses Python outside TVMScript, before any parse."""
    problem = user_script_problem(text, where)
    if problem:
        raise ReduceError(problem)


# --- the checks before reducing -------------------------------------------------------------
LONG_RUN = 30.0   # seconds: an input this slow to judge is replayed once before reducing


def _stable_signature(oracle: Oracle, subject_label: str, cand, want: Optional[str],
                      log: Callable[[str], None] = lambda s: None) -> Outcome:
    outs = oracle.run([cand])
    if outs[0].seconds < LONG_RUN or outs[0].kind in ("hang", "lost"):
        outs += oracle.run([cand] * (REPLAYS - 1))
    else:
        # A large module: minutes a run. The reduced result is replayed REPLAYS times at the
        # end, and an unstable failure shows there as a reproduction rate below REPLAYS.
        log(f"the input took {outs[0].seconds:.0f} s to judge: replayed once, not "
            f"{REPLAYS} times (the reduced result is replayed {REPLAYS} times)")
    oracle.stats["replays"] += len(outs)
    first = outs[0]
    verdicts = collections.Counter(o.verdict for o in outs)
    if first.kind == "not_tvmscript":
        raise ReduceError(f"the {subject_label} is not TVMScript that TVM can parse: "
                          f"{first.error_type}: {first.message}")
    if verdicts["pass"] == REPLAYS:
        raise ReduceError(f"the {subject_label} does not fail: it builds, runs and agrees in "
                          f"{REPLAYS} of {REPLAYS} runs; there is nothing to reduce")
    sigs = collections.Counter(o.signature for o in outs)
    if first.kind == "hang" and len(sigs) == 1:
        log(f"the {subject_label} timed out after {oracle.timeout or oracle.pool.timeout:.0f} s"
            " in every run: reducing the hang (if it is only slow, stop and give a longer "
            "--timeout)")
    if len(sigs) > 1:
        listed = "; ".join(f"{n}x {s or 'pass'}" for s, n in sigs.most_common())
        raise ReduceError(f"the {subject_label} fails only sometimes ({listed}); an unstable "
                          "failure cannot be reduced reliably")
    if first.verdict == "invalid" and first.kind in ("no_entry", "needs_external", "needs_device",
                                                     "input_rejected", "unsupported_input",
                                                     "unsupported_output"):
        raise ReduceError(f"tvmfuzz cannot judge the {subject_label}: {first.message}")
    if first.kind == "no_inputs":
        raise ReduceError(f"the {subject_label} builds, but no inputs can be made to run it: "
                          f"{first.message}")
    if first.verdict == "invalid":
        raise ReduceError(f"TVM refuses to construct the {subject_label} (a generator defect, "
                          f"not a TVM bug): {first.error_type}: {first.message}")
    if first.verdict == "rejected":
        raise ReduceError(f"the {subject_label} is a near-valid mutant that verifier and build "
                          "both refuse: the expected outcome, not a bug")
    if want and first.signature != want:
        raise ReduceError(f"the {subject_label} fails with another signature: "
                          f"{first.signature}")
    return first


def _stable_cmd(oracle: Oracle, subject_label: str, cand) -> None:
    got = [oracle._by_cmd([cand])[0][0] for _ in range(REPLAYS)]
    oracle.stats["replays"] += REPLAYS
    if not any(got):
        raise ReduceError(f"the {subject_label} is not interesting: the --interesting command "
                          "does not exit 0 on it")
    if not all(got):
        raise ReduceError(f"the {subject_label} is interesting only sometimes ({sum(got)} of "
                          f"{REPLAYS}); an unstable test cannot drive a reduction")


def _size_timeout(timeout: float) -> Callable[[int], float]:
    """The time limit for a run of a module of n bindings: ``timeout``, or more for a large
    one (worker.replay.auto_timeout: a guess at TVM's parse and build times)."""
    from worker.replay import auto_timeout

    return lambda n: auto_timeout(timeout, n)


def _candidate_timeout(first: Optional[Outcome], timeout: float) -> float:
    if first is not None and first.kind in ("hang", "lost"):
        return timeout
    seconds = first.seconds if first is not None else 0
    return min(timeout, max(15.0, 5 * float(seconds or 0) + 5))


# --- reductions -------------------------------------------------------------------------------


class _Progress:
    """Writes the best candidate so far (atomically) after each accepted step, so a killed
    or interrupted reduction still leaves its smallest result: as ``partial.case.json`` (or
    ``partial.case.py``), so that a directory holding ``case.json`` always holds the whole
    result (repro.py, report.md) too."""

    def __init__(self, writer: Optional[OutDir], name: str, text_of: Callable):
        self.writer, self.name, self.text_of = writer, name, text_of

    def __call__(self, state) -> None:
        if self.writer is not None:
            self.writer.write(self.name, self.text_of(state))


def reduce_case(program: Program, *, signature: Optional[str] = None,
                interesting: Optional[str] = None, jobs: int = 1,
                out_dir: Optional[Path] = None, timeout: float = 60.0,
                python: str = sys.executable, log: Callable[[str], None] = lambda s: None,
                max_rounds: int = 12, time_budget: Optional[float] = None,
                pool: Optional[SandboxPool] = None, write: bool = True, jail=None) -> Reduction:
    if program.ir == "seeded":
        return _reduce_seeded(program, signature=signature, interesting=interesting,
                              jobs=jobs, out_dir=out_dir, timeout=timeout, python=python,
                              log=log, max_rounds=max_rounds, time_budget=time_budget,
                              pool=pool, write=write, jail=jail)
    t0 = time.monotonic()
    writer = OutDir(out_dir) if out_dir is not None and write else None
    own = pool is None
    pool = pool or SandboxPool(jobs, timeout, python=python, jail=jail)
    try:
        subject = CaseSubject()
        oracle = Oracle(subject, pool, signature or "", interesting,
                        Path(out_dir) / "slippage" if out_dir else None)
        first = _check_start(oracle, "case", program, signature, interesting)
        oracle.target_sig = first.signature if first is not None else signature or ""
        if first is not None and first.verdict == "fail":
            oracle.target_root = subject.root(program, first)
        oracle.timeout = _candidate_timeout(first, timeout)
        start = _pin_schedule(program, first, oracle)
        ops = _case_ops(program)
        progress = _Progress(writer, PARTIAL + "case.json", subject.text)
        driver = Driver(oracle.test, ops.smaller, width=pool.size, log=log, on_accept=progress,
                        deadline=None if time_budget is None else t0 + time_budget,
                        structure=ops.structure)
        unit = "statements" if program.ir == "tir" else "bindings"
        driver.size = lambda p: f"{ops.size(p)} {unit}"
        best, cancelled = _run(driver, start, ops.passes(start, first), max_rounds, log)
        outcome = _final_outcome(oracle, best, first, interesting)
        script, module_json = _print_case(pool, best, outcome)
        trace = _tir_trace(pool, best, outcome)
        repro = _repro_extras(pool, best, outcome, module_json,
                              near_valid=best.meta.get("mode") == "near-valid")
        stats = _stats(oracle, driver, t0, cancelled, ops.size(program), ops.size(best),
                       script_bindings(script) if script else -1)
        stats["python"] = python   # the TVM it ran on (report.md names its version)
        if trace is not None:
            stats["schedule_trace"] = trace
        red = Reduction("case", program, best, oracle.target_sig or outcome.signature,
                        outcome, script, stats, dict(oracle.slipped),
                        writer.path if writer else None, writer, repro)
        if writer is not None:
            from .report import write_outputs

            write_outputs(red)
        return red
    finally:
        if own:
            pool.close()


def _reduce_seeded(program, *, signature, interesting, pool, log, timeout, jobs, python,
                   jail, **common) -> Reduction:
    """A seeded finding is frozen to its mutant's TVMScript: it is reduced as text
    (``reduce_script``), judged under the variants it failed with and its input seed; first
    the passes of its pass-sequence variant that the failure does not need are dropped, one
    at a time, each drop kept while the signature stays."""
    if program.mutant is None:
        raise ReduceError("a seeded case that was not frozen to its mutant: replay it in a "
                          "campaign first (the mutant is made in the sandbox)")
    from worker import cases

    own = pool is None
    pool = pool or SandboxPool(jobs, timeout, python=python, jail=jail)
    try:
        text, seed = program.mutant, int(program.meta.get("seed") or 0)
        variants = [dict(v) for v in program.meta.get("variants") or []]

        def sig(vs) -> str:
            from worker.sandbox_runner import outcome_from_result

            return outcome_from_result(pool.run(cases.job(text, variants=vs,
                                                          input_seed=seed))).signature

        want = signature or ("" if interesting else sig(variants))
        for v in variants:
            passes = list(v.get("passes") or [])
            for i in reversed(range(len(passes))) if want and len(passes) > 1 else ():
                shorter = passes[:i] + passes[i + 1:]
                v["passes"] = shorter
                if sig(variants) == want:
                    passes = shorter
                v["passes"] = passes
        if variants != program.meta.get("variants"):
            log("pass sequence shortened to " + "; ".join(
                ",".join(v.get("passes") or []) for v in variants if v.get("passes")))
        return reduce_script(text, signature=signature, interesting=interesting, jobs=jobs,
                             timeout=timeout, python=python, log=log, variants=variants,
                             input_seed=seed, pool=pool, jail=jail, **common)
    finally:
        if own:
            pool.close()


def _pin_schedule(program, first: Optional[Outcome], oracle: Oracle):
    """A Relax finding of one "scheduled" variant: that variant replays the steps the finding
    applied (``schedule_steps``) instead of drawing from its seed. A draw on a smaller module
    is another schedule, so without this every removal that changes the PrimFuncs loses the
    bug and dead bindings stay; pinned, the steps are reduced too (drop_schedule_steps).
    Kept only where the pinned case still gives the finding (under --interesting nothing
    was judged: no steps to pin)."""
    if program.ir == "tir":
        return _pin_tir_schedule(program, oracle)
    vs = program.meta.get("variants") or []
    steps = (first.extra.get("schedule") or []) if first is not None else []
    scheduled = [i for i, v in enumerate(vs) if v.get("pipeline") == "scheduled"]
    if not steps or len(scheduled) != 1 or vs[scheduled[0]].get("schedule_steps") is not None:
        return program
    pinned = program.copy()
    pinned.meta["variants"][scheduled[0]]["schedule_steps"] = [dict(s) for s in steps]
    return pinned if oracle.test([pinned])[0] else program


def _pin_tir_schedule(program, oracle: Oracle):
    """A TIR case whose schedule is still a seed (a death after the schedule, a hang or a
    signal in the run, records no steps for the campaign to freeze): the steps that seed draws
    on this function, drawn in the sandbox, replace it, for the same reason as a Relax pin;
    repro.py then replays them. Kept only where the pinned case still gives the finding."""
    sched = program.meta.get("schedule") or {}
    if not sched or "applied" in sched:
        return program
    r = oracle.pool.run({"kind": "tir_draw", "program": program.to_json()})
    if r.get("status") != "ok" or r["result"].get("applied") is None:
        return program
    pinned = program.copy()
    pinned.meta["schedule"] = {"applied": r["result"]["applied"], "seed": sched.get("seed")}
    return pinned if oracle.test([pinned])[0] else program


@dataclass
class _CaseOps:
    """The delta passes and size measure of one IR's program model."""
    passes: Callable
    smaller: Callable
    structure: Callable
    size: Callable


def _case_ops(program) -> _CaseOps:
    if program.ir == "tir":
        from .passes.tir import size as TS

        return _CaseOps(lambda p, first: registry.passes("tir"), TS.smaller, TS.structure,
                        TS.statements)
    return _CaseOps(lambda p, first: registry.passes("model", ModelContext.of(p, first)),
                    MS.smaller, MS.structure, MS.bindings)


def reduce_script(text: str, *, signature: Optional[str] = None,
                  interesting: Optional[str] = None, jobs: int = 1,
                  out_dir: Optional[Path] = None, timeout: float = 60.0,
                  python: str = sys.executable, log: Callable[[str], None] = lambda s: None,
                  max_rounds: int = 12, time_budget: Optional[float] = None,
                  variants: Optional[list] = None, input_seed: int = 0,
                  near_valid: bool = False, inputs_by_name: Optional[dict] = None,
                  pool: Optional[SandboxPool] = None, write: bool = True,
                  jail=None, split: bool = True, entry: Optional[str] = None) -> Reduction:
    """Reduce a TVMScript module. ``variants``: judge under these compile variants (as a
    case found with them) instead of the plain llvm build of ``tvmfuzz replay``;
    ``near_valid``: the module is ill-formed on purpose; ``inputs_by_name``: input shapes
    for parameters whose type does not give one (see worker.script_judge); ``split``: cut
    a module of ``SPLIT_FROM`` bindings or more by dependency-aware slices first
    (reducer.split; off: the delta passes alone, for comparison); ``entry``: the Relax
    function to run (default ``main``, else the module's only public one)."""
    from .script_passes import IRSession, ir_passes_for

    check_user_script(text)
    text = original = comment_imports(text)
    t0 = time.monotonic()
    writer = OutDir(out_dir) if out_dir is not None and write else None
    own = pool is None
    pool = pool or SandboxPool(jobs, timeout, python=python, jail=jail)
    try:
        subject = ScriptSubject(variants, input_seed, near_valid, inputs_by_name, entry)
        oracle = Oracle(subject, pool, signature or "", interesting,
                        Path(out_dir) / "slippage" if out_dir else None)
        # A large module takes long to parse: its runs get a limit that grows with it.
        limit = _size_timeout(timeout)
        before = script_bindings(text)   # a full parse of the text: once, 0.8 s at 20k
        oracle.timeout = limit(before)
        first = _check_start(oracle, "TVMScript file", text, signature, interesting, log)
        oracle.target_sig = first.signature if first is not None else signature or ""
        from .hints import op_hints

        progress = _Progress(writer, PARTIAL + "case.py", subject.text)
        if split and before >= SPLIT_FROM:
            # Cut big slices first, each round from one parse in the sandbox (reducer.split).
            split = Split(oracle, pool, timeout_for=limit, hints=op_hints(first),
                          names=message_names(first), near_valid=near_valid, width=pool.size,
                          log=log, on_accept=progress, smaller=script_smaller,
                          deadline=None if time_budget is None else t0 + time_budget)
            text = split.run(text)
        else:
            split = None
        # The time limit of the state the passes start from (its outcome is cached when the
        # split reached it).
        start_limit = limit(script_bindings(text) if split is not None else before)
        oracle.timeout = _candidate_timeout(oracle.outcomes.get(sha256(text), first),
                                            start_limit)
        session = IRSession(pool, start_limit, near_valid, op_hints(first))
        driver = Driver(oracle.test, script_smaller, width=pool.size, log=log,
                        on_accept=progress,
                        deadline=None if time_budget is None else t0 + time_budget,
                        structure=script_structure)
        driver.size = lambda t: f"{script_bindings(t)} bindings"
        if split is not None and split.interrupted:
            best, cancelled, how = text, True, "split"
        else:
            start, how = _canonical_start(pool, oracle, text, start_limit, near_valid)
            log(f"starting from the {how} module")
            if how == "printed":
                best, cancelled = _run(driver, start, ir_passes_for(session), max_rounds, log)
            else:
                best, cancelled = _line_reduce(start, oracle, driver, log), False
        outcome = _final_outcome(oracle, best, first, interesting)
        after = script_bindings(best)
        stats = _stats(oracle, driver, t0, cancelled, before, after, after)
        stats.update(start=how, **{k: v for k, v in session.stats.items()})
        if split is not None:
            stats.update(split.stats)
        red = Reduction("script", original, best, oracle.target_sig or outcome.signature,
                        outcome, best, stats, dict(oracle.slipped),
                        writer.path if writer else None, writer,
                        _repro_extras(pool, best, outcome, "", variants, near_valid))
        red.stats.update(variants=variants, input_seed=input_seed, near_valid=near_valid,
                         inputs_by_name=inputs_by_name, python=python, entry=entry)
        if writer is not None:
            from .report import write_outputs

            write_outputs(red)
        return red
    finally:
        if own:
            pool.close()


def _check_start(oracle: Oracle, label: str, cand, signature, interesting,
                 log: Callable[[str], None] = lambda s: None) -> Optional[Outcome]:
    """The input's outcome, the same in every replay; None under ``interesting`` (the command
    decides what is kept: nothing is judged, the target signature is ``signature``)."""
    if interesting:
        _stable_cmd(oracle, label, cand)
        return None
    return _stable_signature(oracle, label, cand, signature, log)


def _run(driver: Driver, state, passes, max_rounds: int, log) -> tuple[Any, bool]:
    best = [state]
    inner = driver.on_accept

    def keep(s):
        best[0] = s
        inner(s)

    driver.on_accept = keep
    try:
        driver.reduce(state, passes, max_rounds)
        return best[0], False
    except Cancelled as e:
        log(f"stopped: {e}; keeping the smallest candidate so far")
        return best[0], True
    except KeyboardInterrupt:
        log("interrupted; keeping the smallest candidate so far")
        return best[0], True
    finally:
        driver.on_accept = inner


def _canonical_start(pool: SandboxPool, oracle: Oracle, text: str, timeout: float,
                     near_valid: bool = False):
    """IR passes produce TVM-printed text; start from the printed original when it keeps
    the bug, else only text edits (line ddmin) are safe."""
    r = pool.run({"kind": "reducer.ir_canon", "text": text, "near_valid": near_valid}, timeout)
    if r.get("status") == "ok":
        printed = r["result"]["text"]
        if printed == text or oracle.test([printed])[0]:
            return printed, "printed"
    return text, "text"


def _line_reduce(text: str, oracle: Oracle, driver: Driver, log) -> str:
    """Line-level ddmin: the fallback when TVM's print/parse loses the bug."""
    from .linedd import line_ddmin

    reduced, _ = line_ddmin(text, oracle.test, width=driver.width)
    if reduced != text:
        log(f"  line cleanup: {len(text.splitlines())} -> {len(reduced.splitlines())} lines")
        driver.on_accept(reduced)
    return reduced


def _final_outcome(oracle: Oracle, best, first: Optional[Outcome], interesting) -> Outcome:
    """The reduced input's outcome and how often it reproduces the target signature in
    fresh runs (the cached verdict is not trusted alone: a candidate may be flaky)."""
    outcome = oracle.outcome(best)
    again = oracle.run([best] * (REPLAYS - 1))
    oracle.stats["final_replays"] += REPLAYS - 1
    want = oracle.target_sig if not interesting else outcome.signature
    same = sum(o.signature == want and o.verdict == "fail" for o in [outcome] + again)
    # A copy: the oracle's cached outcome stays as it was judged.
    return replace(outcome, reproduction={"reproduced": same, "replays": REPLAYS})


def _dies_in_schedule(outcome: Optional[Outcome]) -> bool:
    """A death by signal inside a schedule step: tracing the schedule writes that step's call
    down and never makes it (it would kill the tracing child too)."""
    return outcome is not None and outcome.kind == "signal" and outcome.stage == "schedule"


def _tir_trace(pool: SandboxPool, prog, outcome: Optional[Outcome] = None) -> Optional[str]:
    """A TIR case's schedule as TVM's trace (for repro.py); None for other cases."""
    if prog.ir != "tir" or not (prog.meta.get("schedule") or {}).get("applied"):
        return None
    r = pool.run({"kind": "tir_trace", "program": prog.to_json(),
                  "signal": _dies_in_schedule(outcome)})
    return r["result"]["trace"] if r.get("status") == "ok" else ""


def _print_case(pool: SandboxPool, prog: Program, outcome: Optional[Outcome] = None
                ) -> tuple[str, str]:
    """(TVMScript of the case, TVM's JSON of its module where a Relax case's printout does
    not parse back to it, or always for a round-trip finding; else "")."""
    job = {"kind": "print", "program": prog.to_json()}
    if prog.ir != "tir":
        job["module_json"] = "always" if outcome is not None and outcome.kind == "roundtrip" \
            else "auto"
    r = pool.run(job)
    if r.get("status") != "ok":
        return "", ""
    return r["result"]["script"], r["result"].get("module_json", "")


def _repro_extras(pool: SandboxPool, subject, outcome: Outcome, module_json: str,
                  variants: Optional[list] = None, near_valid: bool = False) -> dict:
    """What a Relax repro.py needs beyond the script: the module's JSON (see _print_case),
    the module's construction as Python where constructing it is what fails ("builder"), and,
    for "scheduled" variants, the schedule that was applied as TVM's trace."""
    from .repro import failing_variants

    out: dict = {"module_json": module_json} if module_json else {}
    program = subject if isinstance(subject, Program) else None
    near_valid = near_valid or bool(program is not None
                                    and program.meta.get("mode") == "near-valid")
    if program is not None and program.ir == "tir":
        return out
    if program is not None and outcome.stage == "materialize" and \
            outcome.kind in ("crash", "signal", "hang", "oom"):
        # TVM fails while the module is constructed: there is no module to print, so repro.py
        # constructs it call by call.
        r = pool.run({"kind": "builder", "program": program.to_json()})
        if r.get("status") == "ok":
            out["builder"] = r["result"]["builder"]
    vs = variants or failing_variants(program, outcome)
    if any(v.get("pipeline") == "scheduled" for v in vs):
        job = {"kind": "schedule_trace", "variants": vs, "near_valid": near_valid,
               "steps": outcome.extra.get("schedule") or [],
               "signal": _dies_in_schedule(outcome)}
        job.update({"program": program.to_json()} if program is not None else {"text": subject})
        r = pool.run(job)
        out["schedule_traces"] = (r["result"]["traces"] if r.get("status") == "ok" else
                                  {str(i): {"error": "tracing the schedule failed: "
                                            + str(r.get("error", r.get("status")))[:200]}
                                   for i, v in enumerate(vs) if v.get("pipeline") == "scheduled"})
    return out


def _stats(oracle: Oracle, driver: Driver, t0: float, cancelled: bool, before: int,
           after: int, script_after: int) -> dict:
    return {"oracle_calls": oracle.stats["calls"], "cache_hits": oracle.stats["cache_hits"],
            "skipped_before_sandbox": driver.skipped, "accepted": driver.accepted,
            "slippage": oracle.stats["slippage"], "replays": oracle.stats["replays"],
            "final_replays": oracle.stats["final_replays"],
            "seconds": round(time.monotonic() - t0, 2), "stopped_early": cancelled,
            "bindings_before": before, "bindings_after": after,
            "script_bindings_after": script_after,
            "per_pass": {k: {"candidates": v[0], "accepted": v[1], "no_progress": v[2]}
                         for k, v in driver.per_pass.items()}}


def report_input(kind: str, subject_value, *, out_dir: Path, timeout: float = 60.0,
                 python: str = sys.executable, variants: Optional[list] = None,
                 input_seed: int = 0, jail=None, entry: Optional[str] = None) -> Reduction:
    """repro.py and report.md for a failing case or TVMScript file as it is (no reduction):
    replayed three times in the sandbox first, refused when it passes or is unstable."""
    if kind == "case" and subject_value.ir == "seeded":   # its frozen mutant, as text
        if subject_value.mutant is None:
            raise ReduceError("a seeded case that was not frozen to its mutant has no module "
                              "to report: replay it in a campaign first")
        kind, variants = "script", subject_value.meta.get("variants")
        input_seed = int(subject_value.meta.get("seed") or 0)
        subject_value = subject_value.mutant
    writer = OutDir(out_dir)
    t0 = time.monotonic()
    with SandboxPool(1, timeout, python=python, jail=jail) as pool:
        subject = CaseSubject() if kind == "case" else ScriptSubject(variants, input_seed,
                                                                     entry=entry)
        oracle = Oracle(subject, pool)
        label = "case" if kind == "case" else "TVMScript file"
        first = _stable_signature(oracle, label, subject_value, None)
        first = replace(first, reproduction={"reproduced": REPLAYS, "replays": REPLAYS})
        script, module_json = (_print_case(pool, subject_value, first) if kind == "case"
                               else (subject_value, ""))
        trace = _tir_trace(pool, subject_value, first) if kind == "case" else None
        repro = _repro_extras(pool, subject_value, first, module_json, variants)
    size = (_case_ops(subject_value).size(subject_value) if kind == "case"
            else script_bindings(subject_value))
    red = Reduction(kind, subject_value, subject_value, first.signature, first,
                    script, {"replays": REPLAYS, "seconds": round(time.monotonic() - t0, 2),
                             "bindings_before": size, "variants": variants,
                             "input_seed": input_seed, "python": python, "entry": entry}, {},
                    writer.path, writer,
                    repro)
    if trace is not None:
        red.stats["schedule_trace"] = trace
    from .report import write_outputs

    write_outputs(red)
    return red
