"""Generator quality figures: validity, numeric agreement, breadth.

    python bench/validity.py [--count 1000] [--seed 0] [--mode valid] [--breadth 2000]
                             [--construct call_tir|dyn_slice [--alone]]

Runs each generated program through the sandbox (llvm, default pipeline, no extra variant)
and prints: how many pass well_formed and compile, how many run and agree with numpy, the
failures grouped by signature (so each can be judged a TVM bug or a generator defect), how
many distinct ops appear in --count programs, and which catalogued ops never appear in
--breadth programs. ``--construct OP`` keeps only programs holding a node of that op (a
structural one: ``call_tir``, ``if``, ``dps_copy``, ...): seeds from --seed on are scanned
until --count such programs are found. ``--construct call_tir --alone``: programs of one
``R.call_tir`` to a generated PrimFunc (and the nodes making its arguments) returning its
result, one per seed (``fuzz.generate.call_tir_alone``), so the construct's own validity shows;
``--construct dyn_slice --alone``: one ``R.dynamic_strided_slice`` of a parameter
(``fuzz.generate.slice_alone``).
"""
import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.catalogue import CATALOGUE  # noqa: E402
from fuzz.catalogue.known_bugs import explain  # noqa: E402
from fuzz.generate import generate  # noqa: E402
from fuzz.triage import known_reason  # noqa: E402
from worker.sandbox_runner import SandboxRunner  # noqa: E402

# Outcomes that got past well_formed and build (the round trip is checked after the run).
BUILT = ("pass", "numeric", "roundtrip")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mode", default="valid")
    ap.add_argument("--breadth", type=int, default=2000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--construct", default="",
                    help="only programs with a node of this op (call_tir, if, dps_copy, ...)")
    ap.add_argument("--alone", action="store_true",
                    help="with --construct call_tir (or dyn_slice): programs of that node "
                         "alone")
    a = ap.parse_args()

    runner = SandboxRunner(timeout=120)
    t0 = time.time()
    kinds: collections.Counter = collections.Counter()
    known: collections.Counter = collections.Counter()   # failures a known TVM bug explains
    sigs: dict = collections.defaultdict(list)
    ops_seen: collections.Counter = collections.Counter()
    seeds = list(range(a.seed, a.seed + a.count))
    make = generate
    if a.alone:
        from fuzz.generate import call_tir_alone, slice_alone

        alone = slice_alone if a.construct == "dyn_slice" else call_tir_alone

        def make(s, mode):   # noqa: F811 - seeds without a callable PrimFunc count as such
            return alone(s)
        seeds, s = [], a.seed
        while len(seeds) < a.count:
            seeds += [s] if alone(s) is not None else []
            s += 1
        print(f"{a.count} programs of one {a.construct or 'call_tir'} among seeds "
              f"{a.seed}..{s - 1}")
    elif a.construct:
        seeds, s = [], a.seed
        while len(seeds) < a.count:
            if any(n.op == a.construct for f in generate(s, a.mode).functions
                   for n in f.nodes()):
                seeds.append(s)
            s += 1
        print(f"{a.count} programs with {a.construct} among seeds {a.seed}..{s - 1}")
    for i in range(0, len(seeds), a.batch):
        progs = [make(s, a.mode) for s in seeds[i:i + a.batch]]
        for p in progs:
            p.meta["variants"] = None
            ops_seen.update(set(p.ops()))
        for p, o in zip(progs, runner.run_many(progs)):
            k = "pass" if o.verdict == "pass" else o.kind or o.verdict
            kinds[k] += 1
            if k != "pass":
                bug = explain(p, o) or known_reason(p, o)
                known[k] += bool(bug)
                sigs[(o.verdict, "known TVM bug" if bug else "UNEXPLAINED",
                      o.signature)].append(p.meta["seed"])
    runner.close()
    n = a.count
    built = sum(kinds[k] for k in BUILT)
    print(f"{n} {a.mode} programs{' with ' + a.construct if a.construct else ''} in "
          f"{time.time() - t0:.0f}s")
    print(f"well_formed and compile for llvm: {built}/{n} = {100 * built / n:.1f}%")
    agree = kinds["pass"] + kinds["roundtrip"]
    print(f"run and agree with numpy: {agree}/{n} = {100 * agree / n:.1f}% "
          f"({agree}/{built} = {100 * agree / max(built, 1):.1f}% of those built)")
    print("outcomes:", dict(kinds))
    build_known = sum(v for k, v in known.items() if k not in BUILT)
    built_or_known = built + build_known
    print(f"well_formed and compile, apart from known TVM bugs (fuzz/catalogue/known_bugs.py, "
          f"fuzz.triage.known_reason): "
          f"{built_or_known}/{n} = {100 * built_or_known / n:.1f}%")
    agree_or_known = agree + known["numeric"]
    print(f"agree with numpy, apart from known TVM bugs: {agree_or_known}/{built} = "
          f"{100 * agree_or_known / max(built, 1):.1f}% of those built")
    print("failures by signature (count, verdict, explained?, signature, seeds):")
    for (verdict, why, sig), ss in sorted(sigs.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ss):4d}  {verdict:8s} {why:13s} {sig[:220]}  {ss[:4]}")
    print(f"distinct ops in {n} programs: {len(ops_seen)} of {len(CATALOGUE)} catalogued")
    if a.breadth:
        seen2 = set()
        for s in range(a.seed, a.seed + a.breadth):
            seen2.update(generate(s, a.mode).ops())
        missing = sorted(set(CATALOGUE) - seen2)
        print(f"catalogued ops never generated in {a.breadth} programs: {len(missing)} {missing}")


if __name__ == "__main__":
    main()
