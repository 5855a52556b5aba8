"""Replay a case or a user's TVMScript file in the sandbox, several times, and report the
verdict, its signature and how often it reproduced."""
from __future__ import annotations

import collections
import sys
from pathlib import Path
from typing import Optional

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
    if job["kind"] == "case":
        prog = read_input(path)[1]
        key, (status, why) = root_key(prog, outcome), auto_status(prog, outcome)
    else:
        key, status, why = bug_key(outcome), NEW, "a user's TVMScript file: not matched " \
            "against known bugs (they are matched on generated cases)"
    return {"bug_id": bug_id(key), "bug_key": key, "status": status, "reason": why}


def replay_file(path: Path, times: int = 3, timeout: float = 120.0,
                python: str = sys.executable, jail=None, entry: Optional[str] = None) -> dict:
    job = load_job(path, entry)
    runner = SandboxRunner(python=python, timeout=timeout, jail=jail)
    try:
        outcomes = [outcome_from_result(runner.sandbox.run(job)) for _ in range(times)]
    finally:
        runner.close()
    first = outcomes[0]
    sigs = collections.Counter(o.signature for o in outcomes)
    bug = _bug(path, job, first)
    # What `tvmfuzz replay --format json` prints: the first outcome as its JSON.
    return {"file": str(path), "verdict": first.verdict, "kind": first.kind,
            "stage": first.stage, "signature": first.signature,
            "signature_id": signature_id(first.signature) if first.signature else "",
            **bug,
            "message": first.message, "throw_site": first.throw_site,
            "reproduced": sigs[first.signature], "times": times,
            "signatures": dict(sigs), "outcome": first.to_json()}
