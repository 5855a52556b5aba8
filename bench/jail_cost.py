"""What the jail costs: campaign-style cases/s through the sandbox with and without it.

    python bench/jail_cost.py [--count 80] [--batch 8] [--rounds 2]

The same generated cases (campaign mix: Relax and TIR, seeds 0..count-1) run through a
``SandboxRunner`` as a campaign's worker thread runs them (``run_many`` in batches), once with
the server unjailed and once inside the jail, interleaved batch by batch so that load from
other processes on a shared machine falls on both alike. Also prints the server's start time
each way (the jail's one-off cost) and checks both sides reached the same verdicts.
"""
import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.campaign import make_case  # noqa: E402
from worker.jail import require  # noqa: E402
from worker.sandbox_runner import SandboxRunner  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=80)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    progs = [make_case(s, None, ("llvm", "c"), ("relax", "tir"), True, {})
             for s in range(a.count)]
    runners, starts = {}, {}
    for name, jail in (("plain", None), ("jailed", require())):
        t = time.perf_counter()
        runners[name] = SandboxRunner(jail=jail)
        starts[name] = time.perf_counter() - t
    spent = {name: 0.0 for name in runners}
    verdicts = {name: [] for name in runners}
    order = list(runners)
    for rnd in range(a.rounds):
        for k in range(0, len(progs), a.batch):
            random.Random(rnd * 1000 + k).shuffle(order)
            for name in order:
                t = time.perf_counter()
                outs = runners[name].run_many(progs[k:k + a.batch])
                spent[name] += time.perf_counter() - t
                if rnd == 0:
                    verdicts[name] += [o.verdict for o in outs]
    n = len(progs) * a.rounds
    for name in runners:
        print(f"{name:7s} {n / spent[name]:6.2f} cases/s  ({n} cases, {spent[name]:.1f} s); "
              f"server start {starts[name]:.2f} s")
    print(f"jailed / plain throughput: {spent['plain'] / spent['jailed']:.3f}; "
          f"same verdicts on {sum(x == y for x, y in zip(*verdicts.values()))}/{len(progs)} cases")
    for r in runners.values():
        r.close()


if __name__ == "__main__":
    main()
