"""How a campaign or a replay runs one case: through the crash-isolated sandbox, so a case that
kills its process becomes a finding instead of ending the campaign."""
from __future__ import annotations

import re
import sys

from .sandbox import Sandbox
from fuzz.outcome import Outcome
from .variants import Variant

# Sandbox statuses that are findings in their own right, as (kind, error_type).
_DEATHS = {"signal": "signal", "timeout": "hang", "oom": "oom", "exit": "crash",
           "error": "crash", "lost": "lost"}


def outcome_from_result(res: dict, target: str = "llvm") -> Outcome:
    """The Outcome of one sandbox result (the child's ``to_json()`` read back; a death becomes
    a finding of its own kind, placed by the child's last breadcrumb: stage, variant, pass,
    schedule step)."""
    if res.get("status") == "ok":
        return Outcome.from_json(res["result"])
    status = res.get("status", "lost")
    where = res.get("where") or {}
    err = res.get("signal_name") or (f"exit {res['exit_code']}" if "exit_code" in res else "")
    if status == "error":
        # A Python exception escaped the judging code: tvmfuzz's own defect, never TVM's bug.
        return Outcome("invalid", "tvmfuzz_error", "sandbox",
                       error_type=_last_line(res.get("error")).split(":")[0],
                       message=_last_line(res.get("error")), throw_site="",
                       detail=(res.get("error") or "")[-4000:],
                       seconds=res.get("seconds", 0.0), target=target, extra={})
    kind = _DEATHS.get(status, "crash")
    message = {"signal": f"killed by {err}", "timeout": "no result within the time limit",
               "oom": "ran out of memory under the sandbox limit"}.get(
        status, res.get("error") or res.get("reason") or status)
    extra: dict = {}
    if where.get("step"):
        where["stage"] = "schedule"   # inside a schedule primitive (tvmfuzz's own step in a build)
        where.pop("pass", None)
    if where.get("stage"):
        message += f" in {where['stage']}"   # the signature adds the pass or the primitive
        if where.get("variant"):
            extra["variant"] = where["variant"]
            target = Variant.from_json(where["variant"]).label()
        if where.get("pass"):
            extra["failing_pass"] = where["pass"]
        if where.get("op") and where.get("stage") == "materialize":
            extra["op"] = where["op"]   # the node being constructed
        if where.get("kernel") and where.get("stage") == "run":
            extra["kernel"] = where["kernel"]   # the VM call that was running
        if where.get("step"):
            extra["failing_step"] = where["step"]
            extra["schedule"] = list(where.get("steps") or []) + [where["step"]]
        elif where.get("steps"):
            # Died after the schedule (while building or running the scheduled code): the
            # steps applied, so the campaign freezes them and triage can read them.
            extra["schedule"] = list(where["steps"])
    stack = python_stack(res.get("stderr_tail", ""))
    if stack:
        extra["python_stack"] = stack
    native = native_frames(res.get("stderr_tail", ""))
    if native:
        extra["native_frames"] = native
    return Outcome("fail", kind, where.get("stage") or "sandbox", error_type=err,
                   message=message, throw_site="", detail=res.get("stderr_tail", "")[-4000:],
                   seconds=res.get("seconds", 0.0), target=target, extra=extra)


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)', re.M)


def python_stack(stderr: str, depth: int = 8) -> list[str]:
    """The innermost Python frames faulthandler printed for a fatal signal (most recent first),
    as "file:line function" with paths from the package on (tvm/..., worker/...)."""
    block = stderr[stderr.rfind("most recent call first"):] if "most recent call first" in \
        stderr else ""
    frames = []
    for path, line, func in _FRAME.findall(block)[:depth]:
        for top in ("/tvm/", "/tvm_ffi/", "/worker/", "/fuzz/", "/reducer/"):
            if top in path:
                path = path[path.rindex(top) + 1:]
                break
        frames.append(f"{path}:{line} {func}")
    return frames


_NATIVE = re.compile(r'^\s*File "[^"]*", line \d+, in (.+)$', re.M)


def native_frames(stderr: str, depth: int = 3) -> list[str]:
    """The innermost frames in TVM's own C++ (``tvm::...``, not the FFI's plumbing) of the
    native backtrace tvm-ffi prints on a segfault ("Segfault encountered"), as qualified
    function names without their parameter lists, most recent first. Empty when the fault
    was in generated code (no symbols) or the process died otherwise."""
    marker = stderr.rfind("Segfault encountered")
    if marker < 0:
        return []
    out = []
    for func in _NATIVE.findall(stderr[marker:]):
        func = func.strip()
        if not func.startswith("tvm::") or func.startswith("tvm::ffi::"):
            continue
        name = func.split("(", 1)[0]
        if name not in out:
            out.append(name)
        if len(out) == depth:
            break
    return out


class SandboxRunner:
    def __init__(self, python: str = sys.executable, timeout: float = 60.0, mem_mb: int = 4096,
                 jail=None):
        self.sandbox = Sandbox(python=python, timeout=timeout, mem_mb=mem_mb, jail=jail)

    def job(self, prog) -> dict:
        from .cases import job

        return job(prog)

    def __call__(self, prog) -> Outcome:
        return outcome_from_result(self.sandbox.run(self.job(prog)))

    def run_many(self, progs) -> list[Outcome]:
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

    def __call__(self, prog) -> Outcome:
        from .cases import job, judge

        return judge(job(prog))


def default_runner():
    return SandboxRunner()
