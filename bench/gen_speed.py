"""Generation speed: milliseconds to generate one N-op program (target: <= 5 ms for 20 ops).

    python bench/gen_speed.py [--ops 20] [--count 500]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate import generate  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=20)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--mode", default="valid")
    a = ap.parse_args()
    generate(0, a.mode, a.ops)   # warm imports and caches
    times = []
    nodes = 0
    for s in range(a.count):
        t = time.perf_counter()
        p = generate(s, a.mode, a.ops)
        times.append((time.perf_counter() - t) * 1000)
        nodes += len(p.ops())
    times.sort()
    print(f"generate {a.count} programs of {a.ops} ops ({a.mode}): "
          f"mean {statistics.mean(times):.2f} ms, median {statistics.median(times):.2f} ms, "
          f"p95 {times[int(0.95 * len(times))]:.2f} ms; {nodes / a.count:.1f} op nodes/program")


if __name__ == "__main__":
    main()
