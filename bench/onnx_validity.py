"""ONNX cases: how many export, how many onnxruntime accepts, how many TVM imports, builds and
runs, and ONNX cases/s next to Relax cases/s.

    python bench/onnx_validity.py [--count 200] [--seed 0]

1. Export share (no TVM): programs drawn once from the whole catalogue and once from the
   ops with a form at the opset (``ops_for``), exported at each opset; the campaign's cases
   (``make_onnx_case``: up to ONNX_TRIES draws per seed) at their seed's opset.
2. The campaign's ONNX cases judged in the sandbox (llvm, default pipeline, no extra variant):
   onnxruntime accepts / of those TVM imports (and declares the output types onnxruntime
   computed) / of those builds and runs (pass, numeric or round-trip outcome), with the
   failures by signature.
3. Relax cases of the same seeds judged the same way: cases/s of each.
"""
import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate import generate  # noqa: E402
from fuzz.onnx_export import EXPORTABLE_OPS, OPSETS, exportable, ops_for  # noqa: E402
from worker.campaign import make_case  # noqa: E402
from worker.sandbox_runner import SandboxRunner  # noqa: E402

from frontend_validity import (RAN, judge, print_outcomes, relax_throughput,  # noqa: E402
                               share, tally)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    seeds = list(range(a.seed, a.seed + a.count))

    whole = [generate(s) for s in seeds]
    print(f"exportable ops: {len(EXPORTABLE_OPS)}")
    for opset in OPSETS:
        subset = [generate(s, ops=ops_for(opset)) for s in seeds]
        def at(p, opset=opset):
            return exportable(p, opset)

        print(f"opset {opset}: exports {100 * share(whole, at):.1f}% of programs from the "
              f"whole catalogue, {100 * share(subset, at):.1f}% of one draw from the "
              f"{len(ops_for(opset))} ops with a form at this opset")
    cases = [make_case(s, "valid", ir=("onnx",)) for s in seeds]
    for p in cases:
        p.meta["variants"] = None
    attempts = collections.Counter(p.meta.get("onnx_attempt", 0) + 1 for p in cases)
    print(f"campaign cases (up to {max(attempts)} draws): draws per case {dict(attempts)}")

    runner = SandboxRunner(timeout=120)
    outs, secs = judge(runner, cases, a.batch)
    kinds, sigs = tally(cases, outs)
    n = len(cases)
    exported = n - kinds["not_exportable"] - kinds["tvmfuzz_error"]
    accepted = exported - kinds["onnx_rejected"]
    imported = accepted - sum(1 for o in outs if o.stage == "import")
    ran = sum(kinds[k] for k in RAN)
    print(f"{n} ONNX cases in {secs:.1f}s = {n / secs:.2f} cases/s")
    print(f"exported: {exported}/{n} = {100 * exported / n:.1f}%")
    print(f"onnxruntime accepts: {accepted}/{exported} = {100 * accepted / max(exported, 1):.1f}%")
    print(f"TVM imports (types as onnxruntime's): {imported}/{accepted} = "
          f"{100 * imported / max(accepted, 1):.1f}%")
    print(f"builds and runs: {ran}/{imported} = {100 * ran / max(imported, 1):.1f}% "
          f"(agrees and round-trips: {kinds['pass']})")
    print_outcomes(kinds, sigs)
    relax_throughput(runner, seeds, a.batch, secs, "ONNX")


if __name__ == "__main__":
    main()
