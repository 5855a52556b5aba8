"""CI smoke mode: a short, deterministic campaign that fails only on new bugs.

The same seed and TVM give the same cases (seeds S, S+1, ... run in order in one sandbox; the
budget only decides how far the list goes, ``--cases`` fixes it exactly). Findings are grouped
into bugs (``fuzz.signature.bug_id``), each with a status (``fuzz.triage``): a bug that is
known (known_bugs.py, ``known_bug``, ``KNOWN_BUGS``, or a user's verdict in ``--corpus``),
expected (a near-valid mutant's intended refusal) or in the baseline file (its id, or one of its
signatures) is listed and does not fail the run; a new one does. Results go to JUnit XML (for CI
test tabs) and SARIF 2.1.0 (for code-scanning dashboards).

Exit status: 0 no new bug, 1 a new one, 2 usage or environment error.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, Optional
from xml.sax.saxutils import escape, quoteattr

from .campaign import make_case, save_case
from fuzz.signature import bug_id, cause_id, short, signature_id
from fuzz.triage import ORDER, combine

BASELINE_VERSION = 1


class SmokeError(Exception):
    """A usage or environment problem (exit 2)."""


def load_baseline(path: Optional[Path]) -> dict:
    """Signature id -> signature of a baseline file ({} when there is none)."""
    return _read_baseline(path)[0]


def _read_baseline(path: Optional[Path]) -> tuple[dict, dict]:
    """(signatures, bugs) of a baseline file; files written before bugs existed have none."""
    if path is None or not path.exists():
        return {}, {}
    try:
        data = json.loads(path.read_text())
        return dict(data["signatures"]), dict(data.get("bugs") or {})
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SmokeError(f"baseline {path} is not a tvmfuzz baseline file: {e}")


def write_baseline(path: Path, signatures: dict, tvm_version: str,
                   bugs: Optional[dict] = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": BASELINE_VERSION, "tvm": tvm_version,
            "signatures": dict(sorted(signatures.items()))}
    if bugs:
        data["bugs"] = dict(sorted(bugs.items()))    # bug id -> bug key
    path.write_text(json.dumps(data, indent=1) + "\n")


def _user_verdicts(corpus: Optional[Path]) -> dict:
    if corpus is None:
        return {}
    from corpus import Corpus, CorpusError

    try:
        with Corpus(corpus, create=False) as c:
            return c.verdicts()
    except CorpusError as e:
        raise SmokeError(f"--corpus: {e}")


def group_bugs(found: dict, known: dict, known_bugs: dict, verdicts: dict) -> dict:
    """bug id -> {"key", "status", "reason", "signatures": [sid], "count", "baseline",
    "fails"}: the signatures found grouped into bugs, new bugs first. A bug in the baseline (its
    id, or any of its signatures) or with a status other than new does not fail the run."""
    bugs: dict = {}
    for sid, f in found.items():
        b = bugs.setdefault(f["bug_id"], {"key": f["bug_key"], "signatures": [], "count": 0})
        b["signatures"].append(sid)
        b["count"] += f["count"]
    for bid, b in bugs.items():
        b["status"], b["reason"] = combine([(found[s]["status"], found[s]["reason"])
                                            for s in b["signatures"]], verdicts.get(bid))
        b["baseline"] = bid in known_bugs or any(s in known for s in b["signatures"])
        b["fails"] = b["status"] == "new" and not b["baseline"]
    return dict(sorted(bugs.items(), key=lambda kv: (not kv[1]["fails"],
                                                     ORDER.get(kv[1]["status"], 0),
                                                     -kv[1]["count"], kv[0])))


def run_smoke(budget_s: float, out_dir: Path, seed: int = 0, cases: Optional[int] = None,
              baseline: Optional[Path] = None, update_baseline: bool = False,
              extra_passes: tuple = (), echo: Callable[[str], None] = print,
              tvm_python: Optional[str] = None, corpus: Optional[Path] = None) -> int:
    from importlib.metadata import version

    from .sandbox_runner import SandboxRunner
    from fuzz.triage import auto_status, root_key

    known, known_bugs = _read_baseline(baseline)
    verdicts = _user_verdicts(corpus)
    try:
        runner = SandboxRunner(python=tvm_python) if tvm_python else SandboxRunner()
    except Exception as e:  # noqa: BLE001 - no TVM, bad interpreter: the environment's fault
        raise SmokeError(f"cannot start the sandbox: {e}")
    t0 = time.monotonic()
    found: dict[str, dict] = {}          # signature id (cause_id) -> first finding
    case_hashes: list[str] = []
    s = seed
    try:
        while (cases is None and time.monotonic() - t0 < budget_s) or \
                (cases is not None and len(case_hashes) < cases):
            n = 8 if cases is None else min(8, cases - len(case_hashes))
            progs = [make_case(x, None, ("llvm", "c")) for x in range(s, s + n)]
            for p in progs:
                p.meta["variants"][0]["extra_passes"] = list(extra_passes)
                for v in p.meta["variants"][1:]:
                    v["extra_passes"] = list(extra_passes)
                case_hashes.append(hashlib.sha256(p.dumps().encode()).hexdigest()[:16])
            for prog, outcome in zip(progs, runner.run_many(progs)):
                if outcome.verdict != "fail":
                    continue
                key = root_key(prog, outcome)
                first = found.get(signature_id(outcome.signature))
                sid = cause_id(outcome.signature, key, first and first["bug_key"])   # as the corpus
                if sid not in found:
                    stem = save_case(out_dir, prog, outcome, runner.scripts([prog])[0])
                    status, why = auto_status(prog, outcome)
                    found[sid] = {"signature": outcome.signature, "outcome": outcome,
                                  "case": str(stem.with_suffix(".json")), "seed": prog.meta["seed"],
                                  "count": 0, "bug_id": bug_id(key),
                                  "bug_key": key, "status": status, "reason": why}
                found[sid]["count"] += 1
            s += n
    finally:
        runner.close()
    tvm_version = version("apache-tvm")
    bugs = group_bugs(found, known, known_bugs, verdicts)
    failing = {s for b in bugs.values() if b["fails"] for s in b["signatures"]}
    for sid, f in found.items():   # what the reports say about each signature
        b = bugs[f["bug_id"]]
        f["fails"] = sid in failing
        f["why"] = "known (in baseline)" if sid in known or (b["baseline"] and b["status"] == "new") \
            else f"{b['status']}: {b['reason']}"
    new = {k: v for k, v in found.items() if k in failing}
    new_bugs = [bid for bid, b in bugs.items() if b["fails"]]
    (out_dir / "smoke.json").write_text(json.dumps({
        "seed": seed, "cases": len(case_hashes), "case_hashes": case_hashes,
        "seconds": round(time.monotonic() - t0, 1), "tvm": tvm_version,
        "new": sorted(new), "known": sorted(k for k in found if k in known),
        "new_bugs": new_bugs,
        "bugs": [{"id": bid, **{k: b[k] for k in ("key", "status", "reason", "count",
                                                   "signatures", "baseline", "fails")}}
                 for bid, b in bugs.items()]}, indent=1))
    write_junit(out_dir / "smoke.junit.xml", found, known, len(case_hashes))
    write_sarif(out_dir / "smoke.sarif", found, known, tvm_version)
    in_base = sum(k in known for k in found)
    by_status = ", ".join(f"{sum(b['status'] == st and not b['fails'] for b in bugs.values())} "
                          f"{st}" for st in ("known", "expected"))
    echo(f"smoke: {len(case_hashes)} cases from seed {seed} in {time.monotonic() - t0:.0f}s; "
         f"{len(found)} signatures, {len(new)} new, {in_base} in the baseline; "
         f"{len(bugs)} bugs: {len(new_bugs)} new, {by_status}, "
         f"{sum(b['baseline'] and b['status'] == 'new' for b in bugs.values())} "
         "in the baseline")
    for bid, b in bugs.items():    # new bugs first
        if b["fails"]:
            echo(f"  NEW bug {bid}  {short(b['key'])}  ({len(b['signatures'])} signatures)")
            for sid in b["signatures"]:
                f = found[sid]
                echo(f"  NEW {sid}  {short(f['signature'])}\n"
                     f"       case {f['case']} (seed {f['seed']})")
        else:
            label = "baseline" if b["baseline"] and b["status"] == "new" else b["status"]
            echo(f"  {label} bug {bid}  {short(b['key'])}  ({len(b['signatures'])} signatures)"
                 + ("" if label == "baseline" else f"\n       {short(b['reason'], 200)}"))
    if update_baseline:
        if baseline is None:
            raise SmokeError("--update-baseline needs --baseline FILE")
        sigs = {**known, **{k: v["signature"] for k, v in found.items()}}
        write_baseline(baseline, sigs, tvm_version,
                       {**known_bugs, **{bid: b["key"] for bid, b in bugs.items()}})
        echo(f"baseline {baseline} now holds {len(sigs)} signatures")
        return 0
    return 1 if new_bugs else 0


def write_junit(path: Path, found: dict, known: dict, n_cases: int) -> None:
    """One test case per signature: a failure when its bug fails the run (new, not in the
    baseline), skipped with the reason otherwise."""
    def fails(sid):
        return found[sid].get("fails", sid not in known)

    new = [k for k in found if fails(k)]
    rows = []
    for sid, f in found.items():
        name = quoteattr(f"{sid}: {f['signature'][:120]}")
        if not fails(sid):
            why = f.get("why") or "known (in baseline)"
            rows.append(f'  <testcase classname="tvmfuzz.smoke" name={name}>'
                        f'<skipped message={quoteattr(why[:300])}/></testcase>')
        else:
            o = f["outcome"]
            rows.append(f'  <testcase classname="tvmfuzz.smoke" name={name}>'
                        f'<failure message={quoteattr(o.message[:300])} '
                        f'type={quoteattr(o.kind)}>'
                        f'{escape(f["signature"])}\ncase: {escape(f["case"])}\n'
                        f'{escape(o.detail[-2000:])}</failure></testcase>')
    rows.append('  <testcase classname="tvmfuzz.smoke" name="cases run"/>')
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n'
                    f'<testsuite name="tvmfuzz smoke" tests="{len(found) + 1}" '
                    f'failures="{len(new)}" skipped="{len(found) - len(new)}" '
                    f'properties="{n_cases}">\n' + "\n".join(rows) + "\n</testsuite>\n")


def write_sarif(path: Path, found: dict, known: dict, tvm_version: str) -> None:
    from importlib.metadata import version

    rules, results = [], []
    for sid, f in found.items():
        o = f["outcome"]
        fails = f.get("fails", sid not in known)
        rules.append({"id": sid, "name": o.kind,
                      "shortDescription": {"text": f["signature"][:200]},
                      "fullDescription": {"text": f["signature"]},
                      "properties": {"kind": o.kind, "stage": o.stage}})
        loc = {"physicalLocation": {"artifactLocation": {"uri": Path(f["case"]).as_posix()}}}
        if o.throw_site:
            file, _, line = o.throw_site.rpartition(":")
            tvm_loc = {"physicalLocation": {
                "artifactLocation": {"uri": file, "uriBaseId": "TVMSRC"},
                "region": {"startLine": int(line) if line.isdigit() else 1}}}
            locations = [tvm_loc, loc]
        else:
            locations = [loc]
        results.append({
            "ruleId": sid, "level": "error" if fails else "note",
            "baselineState": "new" if fails else "unchanged",
            "message": {"text": f"{o.kind} at {o.stage}: {o.message}"[:1000]},
            "locations": locations,
            "partialFingerprints": {"tvmfuzzSignature/v1": sid,
                                    **({"tvmfuzzBug/v1": f["bug_id"]} if f.get("bug_id") else {})},
            "properties": {"count": f["count"], "seed": f["seed"], "target": o.target,
                           **{k: f[k] for k in ("bug_id", "status", "why") if k in f}}})
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "tvmfuzz", "version": version("tvmfuzz"),
                                "informationUri": "https://github.com/apache/tvm",
                                "rules": rules}},
            "properties": {"tvmVersion": tvm_version},
            "results": results}]}
    path.write_text(json.dumps(sarif, indent=1))
