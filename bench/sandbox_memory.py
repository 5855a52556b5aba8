"""Worker memory over many cases: the sandbox server's RSS at start and every --every cases,
with recycling off, so the figure is the server's own growth (target: within 10% of start).

    python bench/sandbox_memory.py [--count 5000] [--every 1000]
"""
import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate import generate  # noqa: E402
from worker.sandbox import Sandbox  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--ops", type=int, default=2)
    a = ap.parse_args()
    sb = Sandbox(recycle_after=10 ** 9, max_rss_growth=10.0)   # measure, do not recycle
    start = sb.start_rss_kb
    print(f"server RSS at start: {start / 1024:.1f} MiB")
    t0, done, statuses = time.time(), 0, {}
    while done < a.count:
        n = min(a.every, a.count - done)
        jobs = [{"kind": "case", "program": generate(s, n_ops=a.ops).to_json(), "input_seed": s}
                for s in range(done, done + n)]
        for r in sb.run_many(jobs):
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        done += n
        print(f"after {done} cases ({time.time() - t0:.0f}s): server RSS "
              f"{sb.rss_kb / 1024:.1f} MiB ({100 * (sb.rss_kb / start - 1):+.1f}%)", flush=True)
    sb.close()
    print("statuses:", statuses)


if __name__ == "__main__":
    main()
