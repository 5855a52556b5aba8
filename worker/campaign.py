"""A local fuzz campaign: generate, compile and run, judge, keep every failure.

First version (embedded default, one process for the cases): the campaigns issue grows it
into N worker processes, the corpus store and the live display.
"""
from __future__ import annotations

import collections
import json
import random
import time
from pathlib import Path
from typing import Callable, Optional

from fuzz.choice import RandomChooser
from fuzz.generate import generate

from .variants import BASE, nvcc_available, random_variant

NEAR_VALID_SHARE = 0.15
BATCH = 8   # cases per sandbox child: amortizes the fork (see worker/sandbox.py)


def case_mode(seed: int, mode: Optional[str]) -> str:
    if mode:
        return mode
    return "near-valid" if random.Random(seed).random() < NEAR_VALID_SHARE else "valid"


def case_variants(seed: int, alternatives: int = 1) -> list[dict]:
    """The base build plus random alternatives, deterministic from the case seed."""
    ch = RandomChooser(seed * 7919 + 17)
    return [BASE.to_json()] + [random_variant(ch, cuda=nvcc_available()).to_json()
                               for _ in range(alternatives)]


def make_case(seed: int, mode: Optional[str]):
    prog = generate(seed, mode=case_mode(seed, mode))
    prog.meta["variants"] = case_variants(seed)
    return prog


def save_case(out_dir: Path, prog, outcome: dict, script: str) -> Path:
    """Write a failing case as JSON (canonical), TVMScript (for people) and its outcome."""
    from .sandbox_runner import ScriptFailure

    kind = outcome.get("kind") or "unknown"
    d = out_dir / "findings" / kind
    d.mkdir(parents=True, exist_ok=True)
    stem = d / f"case_{prog.meta.get('seed', 0):06d}"
    stem.with_suffix(".json").write_text(prog.dumps())
    if isinstance(script, ScriptFailure):
        outcome = dict(outcome, script_error=str(script))
    else:
        stem.with_suffix(".py").write_text(script)
    stem.with_suffix(".outcome.json").write_text(json.dumps(outcome, indent=1))
    return stem


def reproduction(runner, prog, outcome: dict, replays: int) -> dict:
    """Replay a failing case so the finding carries how reliably it reproduces."""
    sig = outcome.get("signature", "")
    same = 1 + sum(runner(prog).get("signature", "") == sig for _ in range(replays - 1))
    return {"reproduced": same, "replays": replays, "rate": round(same / replays, 3)}


def run_campaign(budget_s: float, out_dir: Path, seed: int = 0, mode: Optional[str] = None,
                 echo: Callable[[str], None] = print, runner=None, replays: int = 3,
                 tvm_python: Optional[str] = None) -> dict:
    if runner is None:
        from .sandbox_runner import SandboxRunner

        runner = SandboxRunner(python=tvm_python) if tvm_python else SandboxRunner()
    t0 = time.monotonic()
    counts: collections.Counter = collections.Counter()
    failures: dict[tuple, list[int]] = collections.defaultdict(list)
    last = t0
    s = seed
    run_many = getattr(runner, "run_many", None)
    batch = BATCH if run_many else 1
    try:
        while time.monotonic() - t0 < budget_s:
            progs = [make_case(x, mode) for x in range(s, s + batch)]
            outcomes = run_many(progs) if run_many else [runner(progs[0])]
            for prog, outcome in zip(progs, outcomes):
                verdict = outcome.get("verdict", "fail")
                counts[verdict] += 1
                if verdict == "fail" and replays > 1:
                    outcome["reproduction"] = reproduction(runner, prog, outcome, replays)
                if verdict in ("fail", "invalid"):
                    key = (verdict, outcome.get("kind", ""), outcome.get("stage", ""),
                           outcome.get("error_type", ""), (outcome.get("message") or "")[:160])
                    failures[key].append(prog.meta["seed"])
                    save_case(out_dir, prog, outcome, runner.scripts([prog])[0])
            s += batch
            if time.monotonic() - last > 10:
                last = time.monotonic()
                echo(f"[{last - t0:6.0f}s] {sum(counts.values())} cases "
                     f"({sum(counts.values()) / (last - t0):.1f}/s), "
                     f"pass {counts['pass']}, fail {counts['fail']}, invalid {counts['invalid']}")
    finally:
        close = getattr(runner, "close", None)
        if close:
            close()
    total = sum(counts.values())
    elapsed = time.monotonic() - t0
    summary = {"cases": total, "seconds": round(elapsed, 1), "seeds": [seed, s - 1],
               "verdicts": dict(counts),
               "failures": [{"verdict": k[0], "kind": k[1], "stage": k[2], "error_type": k[3],
                             "message": k[4], "count": len(v), "seeds": v[:10]}
                            for k, v in sorted(failures.items(), key=lambda kv: -len(kv[1]))]}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    echo(f"{total} cases in {elapsed:.0f}s: pass {counts['pass']}, fail {counts['fail']}, "
         f"invalid (generator defects) {counts['invalid']}, "
         f"rejected (mutants both verifier and build refuse) {counts['rejected']}")
    if failures:
        echo("failures seen (count, verdict/kind/stage, first message line):")
        for f in summary["failures"]:
            echo(f"  {f['count']:4d}  {f['verdict']}/{f['kind']}/{f['stage']}  "
                 f"{f['error_type']}: {f['message']}  (seeds {f['seeds'][:3]})")
        echo(f"cases saved under {out_dir / 'findings'}")
    return summary
