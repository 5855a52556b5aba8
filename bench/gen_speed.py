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
    times, cpu = [], []
    nodes = 0
    for s in range(a.count):
        t, c = time.perf_counter(), time.process_time()
        p = generate(s, a.mode, a.ops)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        nodes += len(p.ops())
    times.sort()
    cpu.sort()
    # CPU time is the figure to read on a busy machine; wall time includes waiting for a core.
    for name, xs in (("wall", times), ("cpu", cpu)):
        print(f"generate {a.count} programs of {a.ops} ops ({a.mode}), {name} time: "
              f"mean {statistics.mean(xs):.2f} ms, median {statistics.median(xs):.2f} ms, "
              f"p95 {xs[int(0.95 * len(xs))]:.2f} ms")
    print(f"{nodes / a.count:.1f} op nodes/program")


if __name__ == "__main__":
    main()
