"""Replay a case or a user's TVMScript file in the sandbox, several times, and report the
verdict, its signature and how often it reproduced.

The first run's verdict is handed out as soon as it is known (``on_first``); the repeats
that give the reproduction rate come after it and stop early at a time budget (another run
would pass it) or at Ctrl-C, and the rate counts the runs actually made. A large module
takes long to judge (TVM's parser is superlinear: about 0.4 s for 1,000 Relax bindings, 4 s
for 5,000, 50 s for 20,000 on one core here, and a passing module is parsed twice, for the
round trip), so the time limit of a run grows with the module (``auto_timeout``) unless the
user gives one."""
from __future__ import annotations

import collections
import re
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import click

from fuzz.outcome import Outcome
from fuzz.signature import bug_id, bug_key, signature_id
from fuzz.triage import NEW, auto_status, root_key

from . import cases
from .sandbox_runner import SandboxRunner, outcome_from_result
from .user_input import InputError, read_input


def load_job(path: Path, entry: Optional[str] = None) -> dict:
    """The sandbox job for a file: a case as program-model JSON, or checked TVMScript text
    (``worker.cases``: the job every consumer sends). ``entry``: a TVMScript module's function
    to run (default ``main``, else its only public Relax function)."""
    try:
        kind, value = read_input(path)
    except InputError as e:
        raise click.UsageError(str(e))
    if kind == "case" and entry and entry != value.entry:
        raise click.UsageError(f"--entry is for TVMScript files; {path} is a case whose entry "
                               f"function is {value.entry}")
    return cases.job(value, entry=entry)


def _bug(path: Path, job: dict, outcome: Outcome) -> dict:
    """The bug a failing outcome belongs to (id, key) and its status with the reason, as the
    corpus and campaigns would file it; a TVMScript file has no case to match known bugs on."""
    if outcome.verdict != "fail":
        return {"bug_id": "", "bug_key": "", "status": "", "reason": ""}
    if job["kind"] in ("case", "seeded"):
        prog = read_input(path)[1]
        key, (status, why) = root_key(prog, outcome), auto_status(prog, outcome)
    else:
        key, status, why = bug_key(outcome), NEW, "a user's TVMScript file: not matched " \
            "against known bugs (they are matched on generated cases)"
    return {"bug_id": bug_id(key), "bug_key": key, "status": status, "reason": why}


DEFAULT_TIMEOUT = 120.0
_BINDING = re.compile(r"^[ \t]+[A-Za-z_]\w*[ \t]*(?::[^=\n]*)?=[^=]", re.M)


def text_bindings(text: str) -> int:
    """About how many bindings a TVMScript text has (indented assignments; read as text,
    never parsed: only the time limit depends on it)."""
    return len(_BINDING.findall(text))


def expected_seconds(bindings: int) -> float:
    """A generous guess at one judge of a module this large: parse (superlinear in TVM),
    build, and a second parse for the round trip of a module that passes. Measured with
    chains of adds on one shared core: 20,000 bindings parse in 50-85 s and build in ~13 s."""
    return 3e-7 * bindings * bindings + 1.5e-3 * bindings


def auto_timeout(base: float, bindings: int) -> float:
    """``base``, or three times the expected judge of a module this large if that is more."""
    return float(max(base, round(3 * expected_seconds(bindings))))


def job_bindings(job: dict) -> int:
    return text_bindings(job.get("text") or "") if job.get("kind") != "case" else 0


def replay_file(path: Path, times: int = 3, timeout: Optional[float] = None,
                python: str = sys.executable, jail=None,
                on_first: Optional[Callable[[dict], None]] = None,
                budget: Optional[float] = None, entry: Optional[str] = None) -> dict:
    """Replay ``times`` times (fewer when ``budget`` seconds in all would be passed by
    another run, or on Ctrl-C after the first). ``timeout`` None: ``auto_timeout``.
    ``on_first`` gets the first run's result (reproduced 1/1) before the repeats start.
    ``entry``: the Relax function to judge (``--entry``; None: main, else the only public
    one)."""
    job = load_job(path, entry)
    timeout = auto_timeout(DEFAULT_TIMEOUT, job_bindings(job)) if timeout is None \
        else float(timeout)
    runner = SandboxRunner(python=python, timeout=timeout, jail=jail)
    outcomes: list[Outcome] = []
    stopped = ""
    t0 = time.monotonic()
    try:
        outcomes.append(outcome_from_result(runner.sandbox.run(job)))
        if on_first is not None:
            on_first(_result(path, job, outcomes, times, timeout, ""))
        while len(outcomes) < times:
            spent = time.monotonic() - t0
            each = spent / len(outcomes)
            if budget is not None and spent + each > budget:
                left = times - len(outcomes)
                stopped = (f"{left} more run{'s' if left > 1 else ''} not made: runs take "
                           f"about {each:.0f} s and another would pass the {budget:.0f} s "
                           "budget")
                break
            outcomes.append(outcome_from_result(runner.sandbox.run(job)))
    except KeyboardInterrupt:
        if not outcomes:
            raise
        stopped = f"interrupted after {len(outcomes)} of {times} runs"
    finally:
        runner.close()
    return _result(path, job, outcomes, times, timeout, stopped)


def _result(path: Path, job: dict, outcomes: list, asked: int, timeout: float,
            stopped: str) -> dict:
    first = outcomes[0]
    sigs = collections.Counter(o.signature for o in outcomes)
    bug = _bug(path, job, first)
    # What `tvmfuzz replay --format json` prints: the first outcome as its JSON; "times" is
    # the number of runs made ("asked": --times).
    return {"file": str(path), "verdict": first.verdict, "kind": first.kind,
            "stage": first.stage, "signature": first.signature,
            "signature_id": signature_id(first.signature) if first.signature else "",
            **bug,
            "message": first.message, "throw_site": first.throw_site,
            "reproduced": sigs[first.signature], "times": len(outcomes), "asked": asked,
            "stopped": stopped, "timeout": timeout, "seconds": first.seconds,
            "signatures": dict(sigs), "outcome": first.to_json()}
