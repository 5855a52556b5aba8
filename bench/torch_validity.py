"""PyTorch cases: how many programs have a torch form, how many eager PyTorch runs (and agrees
with numpy on), how many torch.export exports, how many TVM imports, builds and runs, and
PyTorch cases/s next to Relax cases/s in the same sandbox.

    python bench/torch_validity.py [--count 100] [--seed 0]

1. Torch form (no TVM): programs drawn once from the whole catalogue and once from the ops
   the writer has (``EXPORTABLE_OPS``); the campaign's cases (``make_torch_case``: up to
   TORCH_TRIES draws per seed).
2. The campaign's PyTorch cases (their seeds' options: decompositions on and off, weights,
   dynamic dims, the importer's flags) judged in the sandbox (llvm, default pipeline, no
   extra variant): eager PyTorch runs and agrees with numpy / of those torch.export exports /
   of those TVM imports (and declares the output types eager PyTorch computed) / of those
   builds and runs (pass, numeric or round-trip outcome), with the non-pass outcomes by
   signature, and the import share with decompositions on and off.
3. Relax cases of the same seeds judged the same way: cases/s of each.
"""
import argparse
import collections
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.generate import generate  # noqa: E402
from fuzz.torch_export import EXPORTABLE_OPS, exportable  # noqa: E402
from worker.campaign import make_case  # noqa: E402
from worker.sandbox_runner import SandboxRunner  # noqa: E402

from frontend_validity import (RAN, judge, print_outcomes, relax_throughput,  # noqa: E402
                               share, tally)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    seeds = list(range(a.seed, a.seed + a.count))

    print(f"ops with a torch form: {len(EXPORTABLE_OPS)}")
    whole = share([generate(s) for s in seeds], exportable)
    subset = share([generate(s, ops=EXPORTABLE_OPS) for s in seeds], exportable)
    print(f"torch form: {100 * whole:.1f}% of programs from the "
          f"whole catalogue, {100 * subset:.1f}"
          f"% of one draw from the {len(EXPORTABLE_OPS)} ops")
    cases = [make_case(s, "valid", ir=("torch",)) for s in seeds]
    for p in cases:
        p.meta["variants"] = None
    attempts = collections.Counter(p.meta.get("torch_attempt", 0) + 1 for p in cases)
    print(f"campaign cases (up to {max(attempts)} draws): draws per case {dict(attempts)}")

    runner = SandboxRunner(timeout=180)
    runner.run_many(cases[:1])   # the server imports and warms torch once: not a case's cost
    outs, secs = judge(runner, cases, a.batch)
    kinds, sigs = tally(cases, outs)
    n = len(cases)
    written = n - kinds["not_exportable"] - kinds["tvmfuzz_error"]
    eager = written - sum(1 for o in outs if o.stage == "eager")
    exported = eager - sum(1 for o in outs if o.stage == "torch_export")
    imported = exported - sum(1 for o in outs if o.stage == "import")
    ran = sum(kinds[k] for k in RAN)
    print(f"{n} PyTorch cases in {secs:.1f}s = {n / secs:.2f} cases/s")
    print(f"written as nn.Module: {written}/{n} = {100 * written / n:.1f}%")
    print(f"eager PyTorch runs and agrees with numpy: {eager}/{written} = "
          f"{100 * eager / max(written, 1):.1f}%")
    print(f"torch.export exports: {exported}/{eager} = {100 * exported / max(eager, 1):.1f}%")
    print(f"TVM imports (types as eager PyTorch's): {imported}/{exported} = "
          f"{100 * imported / max(exported, 1):.1f}%")
    print(f"builds and runs: {ran}/{imported} = {100 * ran / max(imported, 1):.1f}% "
          f"(agrees and round-trips: {kinds['pass']})")
    for flag in ("decompose", "run_ep_decomposition"):
        for on in (True, False):
            sel = [o for p, o in zip(cases, outs) if bool(p.meta["torch"][flag]) == on
                   and o.verdict != "invalid"]
            imp = sum(o.stage != "import" for o in sel)
            print(f"  {flag}={on}: imported {imp}/{len(sel)}")
    print_outcomes(kinds, sigs)
    relax_throughput(runner, seeds, a.batch, secs, "PyTorch")


if __name__ == "__main__":
    main()
