"""Coverage with and without guidance: two campaigns of the same seed and time, side by side.

    python bench/coverage_guidance.py --time 10m --jobs 1 --out /tmp/cov_bench

runs ``tvmfuzz run --guidance`` and ``--no-guidance`` one after the other (each its own out
dir and corpus, no background reduction), then prints the cells of each kind
(fuzz/coverage.py) after the campaign, the cases run and the bugs met (new, known, expected).
``tvmfuzz findings --corpus OUT/<on|off>/corpus`` lists each run's bugs for triage.
Extra arguments after ``--`` go to both campaigns (``-- --ir relax``).

Measured (``--time 10m --jobs 1 --seed 0``, the default IRs relax,tir,onnx,torch, at 22:57
and 23:07 UTC on 2026-11-25 on this 2-core VM; the guided run overlapped the full test
suite, so it ran fewer cases)::

                           guidance on guidance off
    op x dtype x shape              417          471
    op->op edges                    181          265
    pass x op                       753         1024
    primitive x block               180          244
    ops                         159/169      160/169
    cases                           184          240
    validity %                     96.7         97.9
    bugs new / known / expected 25/6/6       29/8/7
    at the first 184 cases of each: cells 417 vs 400, edges 181 vs 212, pass x op 753 vs 818,
    primitive x block 180 vs 228

Triage (every bug key read; the 8 not met before reduced and read): distinct real bugs 29
guided, 35 unguided, 23 in both, after merging what one root filed twice (the PyTorch
importer's matmul out_dtype met as float16/bfloat16/float64; StaticPlanBlockMemory's
undefined Var met under CodeGenVM's message; selu's decomposition named by the output's op:
the first two are one key now). Guidance did not pay in these 10 minutes: at equal case
counts it covers more op x dtype cells and fewer edges and pass x op cells. An earlier
3-minute comparison (load 6-11) showed the same mix. TIR generation is not guided.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fuzz.coverage import KINDS, TITLES  # noqa: E402


def campaign(out: Path, guided: bool, args, extra) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    cmd = [sys.executable, "-m", "tvmfuzz", "run", "--time", args.time, "--jobs", str(args.jobs),
           "--seed", str(args.seed), "--out", str(out), "--corpus", str(out / "corpus"),
           "--no-reduce", "--no-live", "--guidance" if guided else "--no-guidance", *extra]
    print("$", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    (out / "campaign.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        sys.exit(f"campaign failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads((out / "summary.json").read_text())


def at_cases(out: Path, n: int) -> dict:
    """Coverage totals at the last checkpoint with at most ``n`` cases."""
    best = {}
    for line in (out / "stats.jsonl").read_text().splitlines():
        snap = json.loads(line)
        if snap["cases"] <= n:
            best = snap.get("coverage") or {}
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time", default="10m", help="each campaign's budget (tvmfuzz run --time)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="/tmp/tvmfuzz-coverage-bench")
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    base = Path(args.out)
    if base.exists() and any(base.iterdir()):
        sys.exit(f"--out {base}: not empty (two fresh campaigns are compared)")
    res = {}
    for name, guided in (("on", True), ("off", False)):
        (base / name).mkdir(parents=True, exist_ok=True)
        res[name] = campaign(base / name, guided, args, extra)
    on, off = res["on"], res["off"]
    print(f"\ncoverage after {args.time} each, --jobs {args.jobs}, seed {args.seed}:")
    print(f"  {'':22s} {'guidance on':>12s} {'guidance off':>12s}")
    kinds = [k for k in KINDS if on["coverage"].get(k) or off["coverage"].get(k)]
    rows = [(TITLES[k], on["coverage"][k], off["coverage"][k]) for k in kinds]
    rows.append(("ops", on["op_coverage"], off["op_coverage"]))
    rows.append(("cases", on["cases"], off["cases"]))
    rows.append(("cases/s", on["cases_per_s"], off["cases_per_s"]))
    rows.append(("validity %", round(100 * on["validity"], 1), round(100 * off["validity"], 1)))
    for status in ("new", "known", "expected"):
        rows.append((f"bugs {status}", sum(b["status"] == status for b in on["bugs"]),
                     sum(b["status"] == status for b in off["bugs"])))
    rows.append(("distinct signatures", on["unique_signatures"], off["unique_signatures"]))
    for title, a, b in rows:
        print(f"  {title:22s} {str(a):>12s} {str(b):>12s}")
    # The same number of cases: guidance changes which ops are drawn, and so the time per case
    n = min(on["cases"], off["cases"])
    at = {name: at_cases(base / name, n) for name in res}
    print(f"\ncoverage after the first {n} cases of each (stats.jsonl):")
    for k in kinds:
        print(f"  {TITLES[k]:22s} {at['on'].get(k, 0):>12} {at['off'].get(k, 0):>12}")
    print(f"\nbugs: tvmfuzz findings --corpus {base / 'on' / 'corpus'}  (and .../off/corpus)")


if __name__ == "__main__":
    main()
