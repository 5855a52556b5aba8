"""CI smoke mode: a short, deterministic campaign that fails only on new bugs.

The same seed and TVM give the same cases (seeds S, S+1, ... run in order in one sandbox; the
budget only decides how far the list goes, ``--cases`` fixes it exactly). A finding whose
signature is in the baseline file is known and does not fail the run; any other does. Results
go to JUnit XML (for CI test tabs) and SARIF 2.1.0 (for code-scanning dashboards).

Exit status: 0 no new signature, 1 a new one, 2 usage or environment error.
"""
from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Callable, Optional
from xml.sax.saxutils import escape, quoteattr

from .campaign import make_case, save_case
from .signature import short, signature_id

BASELINE_VERSION = 1


class SmokeError(Exception):
    """A usage or environment problem (exit 2)."""


def load_baseline(path: Optional[Path]) -> dict:
    if path is None or not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        return dict(data["signatures"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SmokeError(f"baseline {path} is not a tvmfuzz baseline file: {e}")


def write_baseline(path: Path, signatures: dict, tvm_version: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": BASELINE_VERSION, "tvm": tvm_version,
                                "signatures": dict(sorted(signatures.items()))}, indent=1) + "\n")


def run_smoke(budget_s: float, out_dir: Path, seed: int = 0, cases: Optional[int] = None,
              baseline: Optional[Path] = None, update_baseline: bool = False,
              extra_passes: tuple = (), echo: Callable[[str], None] = print,
              tvm_python: Optional[str] = None) -> int:
    from importlib.metadata import version

    from .sandbox_runner import SandboxRunner

    known = load_baseline(baseline)
    try:
        runner = SandboxRunner(python=tvm_python) if tvm_python else SandboxRunner()
    except Exception as e:  # noqa: BLE001 - no TVM, bad interpreter: the environment's fault
        raise SmokeError(f"cannot start the sandbox: {e}")
    t0 = time.monotonic()
    found: dict[str, dict] = {}          # signature id -> first finding
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
                if outcome.get("verdict") != "fail":
                    continue
                sid = signature_id(outcome["signature"])
                if sid not in found:
                    stem = save_case(out_dir, prog, outcome, runner.scripts([prog])[0])
                    found[sid] = {"signature": outcome["signature"], "outcome": outcome,
                                  "case": str(stem.with_suffix(".json")), "seed": prog.meta["seed"],
                                  "count": 0}
                found[sid]["count"] += 1
            s += n
    finally:
        runner.close()
    tvm_version = version("apache-tvm")
    new = {k: v for k, v in found.items() if k not in known}
    (out_dir / "smoke.json").write_text(json.dumps({
        "seed": seed, "cases": len(case_hashes), "case_hashes": case_hashes,
        "seconds": round(time.monotonic() - t0, 1), "tvm": tvm_version,
        "new": sorted(new), "known": sorted(k for k in found if k in known)}, indent=1))
    write_junit(out_dir / "smoke.junit.xml", found, known, len(case_hashes))
    write_sarif(out_dir / "smoke.sarif", found, known, tvm_version)
    echo(f"smoke: {len(case_hashes)} cases from seed {seed} in {time.monotonic() - t0:.0f}s; "
         f"{len(found)} signatures, {len(new)} new, {len(found) - len(new)} in the baseline")
    for sid, f in new.items():
        echo(f"  NEW {sid}  {short(f['signature'])}\n       case {f['case']} (seed {f['seed']})")
    if update_baseline:
        if baseline is None:
            raise SmokeError("--update-baseline needs --baseline FILE")
        write_baseline(baseline, {**known, **{k: v["signature"] for k, v in found.items()}},
                       tvm_version)
        echo(f"baseline {baseline} now holds {len(known) + len(new)} signatures")
        return 0
    return 1 if new else 0


def write_junit(path: Path, found: dict, known: dict, n_cases: int) -> None:
    new = [k for k in found if k not in known]
    rows = []
    for sid, f in found.items():
        name = quoteattr(f"{sid}: {f['signature'][:120]}")
        if sid in known:
            rows.append(f'  <testcase classname="tvmfuzz.smoke" name={name}>'
                        f'<skipped message="known (in baseline)"/></testcase>')
        else:
            o = f["outcome"]
            rows.append(f'  <testcase classname="tvmfuzz.smoke" name={name}>'
                        f'<failure message={quoteattr(o.get("message", "")[:300])} '
                        f'type={quoteattr(o.get("kind", ""))}>'
                        f'{escape(f["signature"])}\ncase: {escape(f["case"])}\n'
                        f'{escape(o.get("detail", "")[-2000:])}</failure></testcase>')
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
        rules.append({"id": sid, "name": o.get("kind", "finding"),
                      "shortDescription": {"text": f["signature"][:200]},
                      "fullDescription": {"text": f["signature"]},
                      "properties": {"kind": o.get("kind"), "stage": o.get("stage")}})
        loc = {"physicalLocation": {"artifactLocation": {"uri": Path(f["case"]).as_posix()}}}
        if o.get("throw_site"):
            file, _, line = o["throw_site"].rpartition(":")
            tvm_loc = {"physicalLocation": {
                "artifactLocation": {"uri": file, "uriBaseId": "TVMSRC"},
                "region": {"startLine": int(line) if line.isdigit() else 1}}}
            locations = [tvm_loc, loc]
        else:
            locations = [loc]
        results.append({
            "ruleId": sid, "level": "note" if sid in known else "error",
            "baselineState": "unchanged" if sid in known else "new",
            "message": {"text": f"{o.get('kind')} at {o.get('stage')}: {o.get('message', '')}"[:1000]},
            "locations": locations,
            "partialFingerprints": {"tvmfuzzSignature/v1": sid},
            "properties": {"count": f["count"], "seed": f["seed"], "target": o.get("target")}})
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
