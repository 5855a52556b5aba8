"""Run every repro.py under a directory in a fresh process, as a maintainer would.

    python bench/repro_check.py RUN_DIR [--timeout 300] [--format json]

Each repro.py is copied alone into an empty temporary directory and run with this
interpreter, with no PYTHONPATH (it must need only TVM and numpy). Prints one line per
reproducer (exit code: 1 reproduced, 0 did not fail, 2 another failure; negative: killed)
and the totals, so a campaign's reductions (RUN_DIR/reduced/*/repro.py) or `tvmfuzz reduce`
outputs can be checked in one command.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_one(repro: Path, timeout: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="repro-check-") as d:
        local = Path(d) / "repro.py"
        shutil.copy(repro, local)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        t0 = time.monotonic()
        try:
            r = subprocess.run([sys.executable, str(local)], cwd=d, env=env, timeout=timeout,
                               capture_output=True, text=True)
            code, out = r.returncode, (r.stdout + r.stderr)
        except subprocess.TimeoutExpired:
            code, out = "timeout", ""
    last = [ln for ln in out.splitlines() if ln.strip()][-1:] or [""]
    return {"repro": str(repro), "exit": code, "seconds": round(time.monotonic() - t0, 1),
            "last_line": last[0][:200]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--format", choices=["text", "json"], default="text")
    a = ap.parse_args()
    found = sorted(Path(a.dir).rglob("repro.py"))
    rows = [run_one(p, a.timeout) for p in found]
    if a.format == "json":
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{str(r['exit']):>8}  {r['seconds']:6.1f}s  {r['repro']}  | {r['last_line']}")
        counts = collections.Counter(str(r["exit"]) for r in rows)
        print(f"{len(rows)} repro.py: " + ", ".join(f"exit {k}: {v}" for k, v in
                                                    sorted(counts.items())))
    return 0 if rows and all(r["exit"] == 1 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
