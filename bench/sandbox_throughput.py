"""Sandbox throughput against the in-process floor (target: ratio >= 0.85).

    python bench/sandbox_throughput.py [--count 60] [--ops 3] [--batch 16]

The floor is the same programs through compile_and_run in a bare loop in this process. Cases
that did not end "ok" in the sandbox (a crash would kill the loop) are left out of both.
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate import generate  # noqa: E402
from worker.execute import compile_and_run  # noqa: E402
from worker.sandbox import Sandbox  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=60)
    ap.add_argument("--ops", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    progs = [generate(s, n_ops=a.ops) for s in range(a.count)]
    t = time.perf_counter()
    sb = Sandbox(batch=a.batch)
    start_s, start_rss = time.perf_counter() - t, sb.start_rss_kb
    res = sb.run_many([{"kind": "case", "program": p.to_json()} for p in progs])   # warm-up
    progs = [p for p, r in zip(progs, res) if r["status"] == "ok"]
    jobs = [{"kind": "case", "program": p.to_json()} for p in progs]
    compile_and_run(progs[0])                                                      # warm-up

    # Interleaved chunk by chunk (one sandbox batch each), so load from other processes on a
    # shared machine falls on both sides alike.
    t_floor = t_sand = 0.0
    res = []
    for k in range(0, len(progs), a.batch):
        t = time.perf_counter()
        for p in progs[k:k + a.batch]:
            compile_and_run(p)
        t_floor += time.perf_counter() - t
        t = time.perf_counter()
        res += sb.run_many(jobs[k:k + a.batch])
        t_sand += time.perf_counter() - t
    floor, sand = len(progs) / t_floor, len(progs) / t_sand
    assert all(r["status"] == "ok" for r in res)
    print(f"{len(progs)}/{a.count} programs of {a.ops} ops (batch {a.batch}): "
          f"in-process {floor:.2f} cases/s, sandbox {sand:.2f} cases/s, ratio {sand / floor:.3f}")
    print(f"server: start {start_s:.2f} s, RSS {start_rss / 1024:.1f} MB at start, "
          f"{sb.rss_kb / 1024:.1f} MB after {sb.jobs_done} jobs, restarts {sb.restarts}")
    sb.close()


if __name__ == "__main__":
    main()
