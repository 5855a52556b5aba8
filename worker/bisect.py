"""``tvmfuzz bisect``: replay one finding on every installed TVM release and say, per release,
whether the bug is there.

A finding is a case JSON (campaign ``findings/``, a reducer directory's ``case.json``, a corpus
bucket) with its stored signature, or a TVMScript file, whose signature is the one it fails with
on the default release. Each release runs it in its own sandbox (``worker/sandbox.py`` under the
env's interpreter). Verdicts:

* ``present``    fails with the same signature;
* ``absent``     passes (or, for a near-valid mutant, verifier and build both refuse it);
* ``different``  fails with another signature (shown);
* ``error``      cannot run there: the program cannot be materialized or parsed on that release,
                 or the sandbox does not start (the reason is shown).

"The same signature" is compared up to what moves between releases without being another bug:
the line number of the C++ throw site and the dtype spelling in messages (0.25 prints
``bfloat16`` where 0.26 prints ``T.bfloat16``). Anything else that differs (a reworded message,
another throw site file, another failing pass) makes the verdict ``different``.
"""
from __future__ import annotations

import collections
import json
import re
from pathlib import Path
from typing import Callable, Optional

from fuzz.model import Program
from fuzz.outcome import Outcome

from . import cases
from .releases import Release, all_releases
from .sandbox_runner import outcome_from_result
from .user_input import InputError, case_problem, read_input


class BisectError(Exception):
    """The input cannot be bisected; one line for the user (exit status 2)."""


_SITE_LINE = re.compile(r"(@ \S+?):\d+")
_T_DTYPE = re.compile(r"\bT\.(?=(?:bfloat16|float\d+|u?int\d+|bool)\b)")


def release_key(sig: str) -> str:
    """A signature without what changes between releases for one bug (see the module doc)."""
    return _T_DTYPE.sub("", _SITE_LINE.sub(r"\1", sig or ""))


def same_bug(a: str, b: str) -> bool:
    return bool(a) and release_key(a) == release_key(b)


# --- the input ------------------------------------------------------------------------------
class Subject:
    """What is bisected: the sandbox job, the signature to look for ("" = the default
    release's), a label, and the reducer directory it lives in (if any)."""

    def __init__(self, label: str, job: dict, signature: str = "",
                 case_dir: Optional[Path] = None, kind: str = "case"):
        self.label, self.job, self.signature, self.case_dir, self.kind = (
            label, job, signature, case_dir, kind)


def load_subject(spec: str, corpus_dir: Optional[str] = None,
                 entry: Optional[str] = None) -> Subject:
    """A case JSON, a TVMScript file, a reducer directory (its case.json or case.py) or a
    corpus bucket id. ``entry``: a TVMScript module's function to run (default: the one its
    reduction ran, from reduce.json, else ``main``, else the only public one)."""
    path = Path(spec)
    if path.is_dir():
        for name in ("case.json", "case.py"):
            if (path / name).is_file():
                path = path / name
                break
        else:
            raise BisectError(f"{spec} is a directory without case.json or case.py")
    if not path.exists():
        return _bucket_subject(spec, corpus_dir)
    try:
        kind, value = read_input(path)
    except InputError as e:
        raise BisectError(str(e))
    case_dir = path.parent if (path.parent / "report.md").is_file() else None
    if kind == "case":
        if entry and entry != value.entry:
            raise BisectError(f"--entry is for TVMScript files; {spec} is a case whose entry "
                              f"function is {value.entry}")
        return Subject(str(path), cases.job(value), _stored_signature(path), case_dir)
    if entry is None and (path.parent / "reduce.json").is_file():
        try:
            entry = json.loads((path.parent / "reduce.json").read_text()).get("entry")
        except (OSError, ValueError, AttributeError):
            entry = None
    return Subject(str(path), cases.job(value, entry=entry), "", case_dir, "script")


def _resign(outcome: dict) -> str:
    """The signature of a stored outcome (its JSON, as a file or a corpus row keeps it) by
    this tvmfuzz's rules (an older tvmfuzz may have normalized names differently), or the
    stored one when the outcome is not kept whole."""
    from fuzz.signature import signature

    if outcome.get("verdict") == "fail" and "message" in outcome:
        return signature(outcome) or outcome.get("signature", "")
    return outcome.get("signature", "") or ""


def _stored_signature(path: Path) -> str:
    """The signature a campaign (``case_N.outcome.json``) or a reduction (``outcome.json``,
    ``reduce.json``) stored beside the case; "" when there is none."""
    for cand in (path.with_name(path.name[:-len(".json")] + ".outcome.json"),
                 path.parent / "outcome.json"):
        try:
            sig = _resign(json.loads(cand.read_text()))
        except (OSError, ValueError, AttributeError):
            continue
        if sig:
            return sig
    try:
        return json.loads((path.parent / "reduce.json").read_text()).get("signature", "") or ""
    except (OSError, ValueError, AttributeError):
        return ""


def _bucket_subject(spec: str, corpus_dir: Optional[str]) -> Subject:
    from corpus import CorpusError, representative

    try:
        b = representative(spec, corpus_dir)
    except CorpusError as e:
        raise BisectError(str(e))
    prog = Program.from_json(b["case"])
    problem = case_problem(prog)
    if problem:
        raise BisectError(f"bucket {b['id']} refused: {problem}")
    return Subject(f"bucket {b['id']}", cases.job(prog),
                   _resign(b.get("outcome") or {}) or b.get("signature", ""))


# --- running --------------------------------------------------------------------------------
def _judge(outcomes: list[Outcome], want: str) -> dict:
    first = outcomes[0]
    sig = first.signature
    verdict = first.verdict
    msg = ""
    if verdict == "pass":
        v = "absent"
    elif verdict == "rejected":
        # A near-valid mutant that verifier and build both refuse: the expected outcome. Say
        # why the build refused: on an old release it may be something else entirely.
        v, sig = "absent", ""
        msg = (f"verifier and build both refuse it (build: {first.error_type}: "
               f"{first.message})")[:400]
    elif verdict == "invalid":
        v = "error"
        what = {"not_tvmscript": "does not parse",
                "generator": "cannot be materialized",
                "needs_torch": "cannot be judged without torch (a PyTorch case)"}.get(
                    first.kind, "cannot be judged")
        msg = (f"{what} on this release: {first.error_type or first.kind}: "
               f"{first.message}").strip()[:400]
        sig = ""
    elif first.kind == "lost":
        v, msg, sig = "error", f"the sandbox failed: {first.message}"[:400], ""
    else:
        v = "present" if same_bug(sig, want) else "different"
        msg = first.message[:400]
    same = sum(1 for o in outcomes if o.signature == first.signature)
    return {"verdict": v, "signature": sig, "message": msg, "reproduced": same,
            "times": len(outcomes), "kind": first.kind, "stage": first.stage}


def run_on(release: Release, job: dict, times: int, timeout: float, jail=None) -> list[Outcome]:
    from .sandbox_runner import SandboxRunner

    runner = SandboxRunner(python=release.python, timeout=timeout, jail=jail)
    try:
        if runner.sandbox.hello.get("tvm"):
            release.tvm = runner.sandbox.hello["tvm"]
        return [outcome_from_result(runner.sandbox.run(job)) for _ in range(times)]
    finally:
        runner.close()


def bisect(subject: Subject, releases: Optional[list[Release]] = None, times: int = 1,
           timeout: float = 120.0, log: Callable[[str], None] = lambda s: None,
           jail=None) -> dict:
    """Run ``subject`` on each release (inside ``jail`` when given); the result as
    ``tvmfuzz bisect --format json`` prints it. The default release runs first: without a stored signature, its failure is the one
    looked for."""
    rels = list(releases if releases is not None else all_releases())
    order = sorted(rels, key=lambda r: not r.default)   # the default first, then as listed
    want = subject.signature
    results: dict[int, dict] = {}
    for r in order:
        log(f"running on {r.version} ({r.python})")
        try:
            outs = run_on(r, subject.job, times, timeout, jail)
        except RuntimeError as e:   # the sandbox server did not start under that interpreter
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            why = lines[0] + (f" ... {lines[-1]}" if len(lines) > 1 else "") if lines else str(e)
            results[id(r)] = {"verdict": "error", "signature": "", "reproduced": 0,
                              "times": times, "kind": "", "stage": "", "message": why[:400]}
            continue
        if r.default and not want and outs[0].verdict == "fail":
            want = outs[0].signature
        results[id(r)] = _judge(outs, want)
    rows = []
    for r in rels:
        row = {"version": r.version, "tvm": r.tvm, "python": r.python, "default": r.default}
        row.update(results[id(r)])
        rows.append(row)
    return {"case": subject.label, "kind": subject.kind, "signature": want,
            "stored_signature": bool(subject.signature), "releases": rows,
            "matching": "signatures compared up to the throw site's line number and dtype "
                        "spelling"}


def summary(result: dict) -> str:
    """One line: where the bug is present."""
    by = collections.defaultdict(list)
    for r in result["releases"]:
        by[r["verdict"]].append(r["version"])
    return "; ".join(f"{v}: {', '.join(by[v])}" for v in ("present", "absent", "different",
                                                          "error") if by[v])


def format_table(result: dict) -> str:
    from fuzz.signature import short

    lines = [f"case: {result['case']}",
             f"signature: {result['signature'] or '(passes on the default release)'}"
             + ("" if result.get("stored_signature") else "  (from the default release)")]
    rows = [("release", "tvm", "verdict", "signature / message")]
    for r in result["releases"]:
        detail = ""
        if r["verdict"] == "different":
            detail = short(r["signature"], 160)
        elif r["verdict"] == "absent" and r["message"]:
            detail = r["message"]
        elif r["verdict"] == "error":
            detail = r["message"]
        if r.get("times", 1) > 1 and r["verdict"] in ("present", "different"):
            detail = (detail + f"  (reproduced {r['reproduced']}/{r['times']})").strip()
        rows.append((r["version"] + (" (default)" if r["default"] else ""), r["tvm"],
                     r["verdict"], detail))
    w = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        lines.append(f"{row[0]:<{w[0]}}  {row[1]:<{w[1]}}  {row[2]:<{w[2]}}  {row[3]}".rstrip())
    return "\n".join(lines)
