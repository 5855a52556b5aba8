"""The cost of tracing TVM's Python functions in the sandbox (``tvmfuzz run --py-coverage``).

    python bench/py_coverage_cost.py [--count 48] [--batch 8] [--ir relax]

The same campaign cases (``make_case``: program and variants from the seed) run in two
sandboxes, one with ``TVMFUZZ_PY_COVERAGE=1``, interleaved batch by batch so load from other
processes falls on both alike. Prints cases/s of each, the slowdown, and how many distinct TVM
Python functions the traced cases reached.
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.campaign import make_case  # noqa: E402
from worker.pycoverage import ENV  # noqa: E402
from worker.sandbox import Sandbox  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=48)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ir", default="relax", help="comma list, as tvmfuzz run --ir")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    irs = tuple(a.ir.split(","))
    jobs = [{"kind": "case", "program": make_case(s, None, ir=irs).to_json(),
             "input_seed": s} for s in range(a.seed, a.seed + a.count)]
    os.environ.pop(ENV, None)
    off = Sandbox(batch=a.batch)
    os.environ[ENV] = "1"
    on = Sandbox(batch=a.batch)
    os.environ.pop(ENV, None)
    for sb in (off, on):   # warm-up
        sb.run_many(jobs[:2])
    t_off = t_on = 0.0
    funcs, per_case = set(), []
    for k in range(0, len(jobs), a.batch):
        chunk = jobs[k:k + a.batch]
        t = time.perf_counter()
        off.run_many(chunk)
        t_off += time.perf_counter() - t
        t = time.perf_counter()
        res = on.run_many(chunk)
        t_on += time.perf_counter() - t
        for r in res:
            ran = ((r.get("result") or {}).get("extra") or {}).get("tvm_python") or []
            per_case.append(len(ran))
            funcs.update(ran)
    off.close()
    on.close()
    n = len(jobs)
    print(f"{n} cases (--ir {a.ir}), batches of {a.batch}, interleaved")
    print(f"  without tracing: {t_off:7.1f} s  {n / t_off:5.2f} cases/s")
    print(f"  with tracing:    {t_on:7.1f} s  {n / t_on:5.2f} cases/s")
    print(f"  cost: {100 * (t_on / t_off - 1):+.1f}% time")
    traced = [c for c in per_case if c]
    print(f"  TVM Python functions: {len(funcs)} distinct; per traced case "
          f"{sum(traced) / max(1, len(traced)):.0f} on average ({len(traced)}/{n} cases traced)")


if __name__ == "__main__":
    main()
