"""Reduce the findings of a campaign: size after reduction, signature kept, repro.py works.

    python bench/reduce_campaign.py CAMPAIGN_DIR [--limit 10] [--out /tmp/reduced] [-j 1]
    python bench/reduce_campaign.py --run 60 ...      (runs `tvmfuzz run --time 60` first)

For each ``findings/<kind>/case_*.json`` (kind "generator" skipped: not TVM bugs) it runs
``reducer.reduce_case``, then the written ``repro.py`` in a fresh Python process outside the
repository (so only TVM and numpy are importable) and checks it exits 1 (bug reproduces).
Prints one row per case and the medians; ``--json`` writes the rows.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.model import Program  # noqa: E402
from reducer.api import ReduceError, reduce_case  # noqa: E402


def cases(campaign: Path, limit: int) -> list[Path]:
    found = sorted(p for p in (campaign / "findings").glob("*/case_*.json")
                   if not p.name.endswith(".outcome.json") and p.parent.name != "generator")
    # One per signature first (distinct bugs), then the rest, up to the limit.
    seen, first, rest = set(), [], []
    for p in found:
        o = p.with_name(p.stem + ".outcome.json")
        sig = json.loads(o.read_text()).get("signature", "") if o.exists() else str(p)
        (rest if sig in seen else first).append(p)
        seen.add(sig)
    return (first + rest)[:limit]


def run_repro(path: Path, timeout: float = 300) -> int:
    """Exit status of repro.py in a fresh process, outside the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with tempfile.TemporaryDirectory() as d:
        local = Path(d) / "repro.py"
        local.write_text(path.read_text())
        try:
            return subprocess.run([sys.executable, str(local)], cwd=d, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            return -1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", nargs="?", type=Path)
    ap.add_argument("--run", type=float, default=None, help="run a campaign of this many s")
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "tvmfuzz-reduced")
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    campaign = args.campaign
    if args.run:
        campaign = campaign or Path(tempfile.mkdtemp(prefix="tvmfuzz-campaign-"))
        subprocess.run([sys.executable, "-m", "tvmfuzz", "run", "--time", str(args.run),
                        "--out", str(campaign), "--corpus", str(campaign / "corpus"),
                        "--no-live"], cwd=ROOT, check=False)
    if campaign is None:
        ap.error("give a campaign directory or --run SECONDS")
    rows = []
    for path in cases(campaign, args.limit):
        prog = Program.loads(path.read_text())
        o = path.with_name(path.stem + ".outcome.json")
        orig_sig = json.loads(o.read_text()).get("signature", "") if o.exists() else ""
        out = args.out / f"{path.parent.name}_{path.stem}"
        t0 = time.monotonic()
        try:
            red = reduce_case(prog, out_dir=out, jobs=args.jobs)
        except ReduceError as e:
            rows.append({"case": str(path), "error": str(e)})
            print(f"{path.parent.name}/{path.name}: refused: {e}", flush=True)
            continue
        st = red.stats
        rc = run_repro(out / "repro.py") if (out / "repro.py").exists() else None
        row = {"case": str(path), "kind": path.parent.name, "signature": red.signature,
               "signature_kept": red.signature == orig_sig if orig_sig else None,
               "bindings_before": st["bindings_before"], "bindings_after": st["bindings_after"],
               "script_bindings_after": st["script_bindings_after"],
               "oracle_calls": st["oracle_calls"], "seconds": round(time.monotonic() - t0, 1),
               "slippage": st["slippage"], "repro_exit": rc,
               "reproduced": (red.outcome.reproduction or {}).get("reproduced")}
        rows.append(row)
        print(f"{row['kind']}/{path.name}: {row['bindings_before']} -> {row['bindings_after']} "
              f"bindings, {row['oracle_calls']} calls, {row['seconds']} s, signature kept "
              f"{row['signature_kept']}, repro.py exit {rc}  [{red.signature[:80]}]", flush=True)
    done = [r for r in rows if "error" not in r]
    if done:
        print(f"\n{len(done)} cases reduced ({len(rows) - len(done)} refused): median bindings "
              f"{statistics.median(r['bindings_before'] for r in done)} -> "
              f"{statistics.median(r['bindings_after'] for r in done)}, max after "
              f"{max(r['bindings_after'] for r in done)}; median oracle calls "
              f"{statistics.median(r['oracle_calls'] for r in done)}; signature kept "
              f"{sum(bool(r['signature_kept']) for r in done)}/{len(done)}; repro.py exits 1 "
              f"in a fresh process {sum(r['repro_exit'] == 1 for r in done)}/{len(done)}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
