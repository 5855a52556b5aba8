"""TIR generator validity: how many generated PrimFuncs get through each stage with TVM.

    python bench/tir_validity.py [--count 500] [--seed 0] [--mode valid] [--target llvm]
                                 [--axis-separators]

For each seed: render + parse (``materialize_tir``), verify (``build.verify``), build, run, and
compare with the numpy reference. Prints the share reaching each stage, then the distinct
failures (first error line with numbers and generated names normalized), each marked as a
known TVM bug (``build.known_bug``) or UNEXPLAINED, with a few seeds to replay. Runs in this
process: valid programs do not crash TVM; use the worker's sandbox for near-valid campaigns.
"""
import argparse
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.tir import build as B  # noqa: E402
from fuzz.tir import reference as R  # noqa: E402
from fuzz.tir.generate import generate_tir  # noqa: E402

STAGES = ("parse", "verify", "build", "run", "agree")


def normalize(line: str) -> str:
    line = re.sub(r" at <root>\S*", "", line)       # where in the IR: varies per case
    line = re.sub(r"\b[ptxwivjkrb]\d+\b", lambda m: m.group(0)[0] + "#", line)
    return re.sub(r"-?\d+(\.\d+)?", "N", line)


def judge(seed: int, mode: str, features, target: str):
    """(stages passed, failure line or None, known bug or None)."""
    p = generate_tir(seed, mode, features)
    passed = []
    stage = "parse"
    try:
        mod = B.materialize_tir(p)
        passed.append("parse")
        ok, msg = B.verify(mod)
        if ok:
            passed.append("verify")
        stage = "build"
        lib = B.build(p, target, mod=mod)
        passed.append("build")
        stage = "run"
        inputs = R.make_inputs(p, seed)
        got = B.build_and_run(p, target, inputs=inputs, lib=lib)
        passed.append("run")
    except Exception as e:  # noqa: BLE001 - every TVM failure is a result here
        err = B.first_line(e)
        return passed, f"{stage}: {err}", B.known_bug(p, err)
    try:
        want = R.run(p, inputs)
    except R.ReferenceError as e:
        return passed, f"reference: {e}", None
    bad = B.compare(p, got, want)
    if bad:
        return passed, f"numeric: {bad}", B.known_bug(p)
    passed.append("agree")
    if not ok:
        return passed, f"verify: {msg}", None
    return passed, None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", default="valid", choices=["valid", "near_valid"])
    ap.add_argument("--target", default="llvm")
    ap.add_argument("--axis-separators", action="store_true",
                    help="generate axis_separators (only TVM 0.25 parses them)")
    a = ap.parse_args()
    features = {"axis_separators": True} if a.axis_separators else None

    t0 = time.time()
    reached = collections.Counter()
    fails = collections.defaultdict(list)
    known = 0
    for seed in range(a.seed, a.seed + a.count):
        passed, fail, bug = judge(seed, a.mode, features, a.target)
        reached.update(passed)
        if fail:
            known += bool(bug) and "agree" not in passed
            key = (fail.split(":")[0], normalize(fail)[:160], bug or "UNEXPLAINED")
            fails[key].append(seed)
    n = a.count
    import tvm

    print(f"{n} {a.mode} TIR programs, TVM {tvm.__version__}, target {a.target}, "
          f"{time.time() - t0:.0f}s")
    for s in STAGES:
        print(f"  {s:7s} {reached[s]:5d}/{n} = {100 * reached[s] / n:5.1f}%")
    agree = reached["agree"]
    print(f"build and agree, apart from known TVM bugs: {agree + known}/{n} = "
          f"{100 * (agree + known) / n:.1f}%")
    print("distinct failures (count, stage, first line, explanation, seeds):")
    for (stage, line, why), seeds in sorted(fails.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(seeds):4d}  {line}\n        {why[:110]}  seeds {seeds[:5]}")


if __name__ == "__main__":
    main()
