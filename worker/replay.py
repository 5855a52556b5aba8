"""Replay a case or a user's TVMScript file in the sandbox, several times, and report the
verdict, its signature and how often it reproduced."""
from __future__ import annotations

import collections
import sys
from pathlib import Path

import click

from fuzz.model import Program

from .sandbox_runner import SandboxRunner, outcome_from_result
from .script_guard import UnsafeScript, check_script, comment_imports


def load_job(path: Path) -> dict:
    """The sandbox job for a file: a case as program-model JSON, or checked TVMScript text."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise click.UsageError(f"cannot read {path}: {e}")
    if path.suffix == ".json":
        try:
            prog = Program.loads(text)
        except (ValueError, KeyError, TypeError) as e:
            raise click.UsageError(f"{path} is not a tvmfuzz case: {e}")
        return {"kind": "case", "program": prog.to_json(), "input_seed": prog.meta.get("seed") or 0}
    text = comment_imports(text)   # TVMScript's parser binds I, R, T itself; imports are refused
    try:
        check_script(text)
    except SyntaxError as e:
        raise click.UsageError(f"{path} is not TVMScript (Python syntax error, line {e.lineno})")
    except UnsafeScript as e:
        raise click.UsageError(f"{path} refused: it uses Python outside TVMScript ({e}); "
                               "nothing in it was run")
    return {"kind": "script", "text": text}


def replay_file(path: Path, times: int = 3, timeout: float = 120.0,
                python: str = sys.executable) -> dict:
    job = load_job(path)
    runner = SandboxRunner(python=python, timeout=timeout)
    try:
        outcomes = [outcome_from_result(runner.sandbox.run(job)) for _ in range(times)]
    finally:
        runner.close()
    first = outcomes[0]
    sigs = collections.Counter(o.get("signature", "") for o in outcomes)
    return {"file": str(path), "verdict": first["verdict"], "kind": first.get("kind", ""),
            "stage": first.get("stage", ""), "signature": first.get("signature", ""),
            "message": first.get("message", ""), "throw_site": first.get("throw_site", ""),
            "reproduced": sigs[first.get("signature", "")], "times": times,
            "signatures": dict(sigs), "outcome": first}
