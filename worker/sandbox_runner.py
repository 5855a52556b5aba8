"""How a campaign or a replay runs one case: through the crash-isolated sandbox, so a case that
kills its process becomes a finding instead of ending the campaign."""
from __future__ import annotations

import sys

from .sandbox import Sandbox
from .signature import signature

# Sandbox statuses that are findings in their own right, as (kind, error_type).
_DEATHS = {"signal": "signal", "timeout": "hang", "oom": "oom", "exit": "crash",
           "error": "crash", "lost": "lost"}


def outcome_from_result(res: dict, target: str = "llvm") -> dict:
    """The Outcome dict of one sandbox result (a death becomes a finding of its own kind)."""
    if res.get("status") == "ok":
        return res["result"]
    status = res.get("status", "lost")
    kind = _DEATHS.get(status, "crash")
    err = res.get("signal_name") or (f"exit {res['exit_code']}" if "exit_code" in res else "")
    message = {"signal": f"killed by {err}", "timeout": "no result within the time limit",
               "oom": "ran out of memory under the sandbox limit"}.get(
        status, res.get("error") or res.get("reason") or status)
    out = {"verdict": "fail", "kind": kind, "stage": "sandbox", "error_type": err,
           "message": message, "throw_site": "", "detail": res.get("stderr_tail", "")[-4000:],
           "seconds": res.get("seconds", 0.0), "target": target, "extra": {}}
    out["signature"] = signature(out)
    return out


class SandboxRunner:
    def __init__(self, python: str = sys.executable, timeout: float = 60.0, mem_mb: int = 4096,
                 jail=None):
        self.sandbox = Sandbox(python=python, timeout=timeout, mem_mb=mem_mb, jail=jail)

    def job(self, prog) -> dict:
        # The variants travel in the case (meta["variants"]), so a replay builds it the same way.
        return {"kind": "case", "program": prog.to_json(), "input_seed": prog.meta.get("seed") or 0}

    def __call__(self, prog) -> dict:
        return outcome_from_result(self.sandbox.run(self.job(prog)))

    def run_many(self, progs) -> list[dict]:
        return [outcome_from_result(r) for r in self.sandbox.run_many([self.job(p) for p in progs])]

    def scripts(self, progs) -> list:
        """TVMScript text per program, or a one-line reason it could not be printed."""
        out = []
        for r in self.sandbox.run_many([{"kind": "print", "program": p.to_json()} for p in progs]):
            if r.get("status") == "ok":
                out.append(r["result"]["script"])
            else:
                why = r.get("signal_name") or _last_line(r.get("error")) or r.get("status")
                out.append(ScriptFailure(f"could not print: {why}"[:300]))
        return out

    def close(self) -> None:
        self.sandbox.close()


def _last_line(text) -> str:
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


class ScriptFailure(str):
    """Why a program has no TVMScript (printing it crashed or raised in the sandbox)."""


class InProcessRunner:
    """Runs cases in this process: only for debugging, a crash takes the caller down."""

    def __call__(self, prog) -> dict:
        from .execute import compile_and_run

        return compile_and_run(prog, variants=prog.meta.get("variants"),
                               input_seed=prog.meta.get("seed") or 0).to_json()


def default_runner():
    return SandboxRunner()
