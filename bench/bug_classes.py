"""Cases and time until random generation reaches three TVM bug classes, on an old release.

    TVMFUZZ_HOME=... python bench/bug_classes.py --env 0.25.0 --cases 400 --time 180

(A) pattern fusion that merges functions differing only in bound constants (apache/tvm
#19801: ``FuseOpsByPattern(bind_constants=True)`` groups deduplicated by a StructuralEqual
that skips tensor content); (B) static memory planning that reuses storage a ``match_cast``
view still aliases (apache/tvm #20220); (C) static memory planning that reuses storage a
``vm.builtin.reshape`` view still aliases, views DispatchSortScan makes around a GPU cumsum
(apache/tvm #20134: GPU targets only, found compile-only). Campaign cases (``worker.campaign.make_case``: the
program and its variants, from the seed) are judged in order on the release under test
(``--env``, an installed release, as ``tvmfuzz run --env``); a numeric failure there is judged
again on this interpreter's release (0.27.0.post1, where all three are fixed), and so is a
``memory_plan_overlap`` finding (``worker.execute.planned_overlaps``, at build time). A
failure that the fixed release passes is put in a class: (C) an overlap through
``vm.builtin.reshape``; (A) ``const`` tensor operands from ``fuzz.motifs`` and a
``FuseOpsByPattern`` variant; (B) a ``match_cast`` of a computed value (a wrong result, or
an overlap through ``match_cast``); anything else fixed since is counted as "other fixed".
``--motif-only`` judges only cases holding a motif of a class or a scan (the others cannot be
in a class; their count still advances, so "cases" is the position in the campaign's stream).
``--targets`` are the cases' target kinds (default all, as ``tvmfuzz run``).

Prints, per class, the first hit: its position, the seconds spent judging until it, the seed
and the signature on the old release.

Measured (``--env 0.25.0 --cases 3000 --time 200 --motif-only``, generator v3, this 2-core VM
shared with other jobs): 367 of the 3000 cases judged in 117 s; (A) first at case 1426 after
59 s (seed 1425: three ``matmul(p1, const)`` copies, variant ``FuseOpsByPattern:relax.matmul@c;
relax.matmul@c``; ``numeric | compare | relax.matmul:int32``; passes on 0.26.0 and 0.27);
(B) first at case 535 after 23 s (seed 534: a ``match_cast`` of ``atan(p1)`` in the default
pipeline; ``numeric | compare | match_cast:float32``; also wrong on 0.26.0, passes on 0.27);
2 other numeric failures fixed since (adaptive_avg_pool3d float16, layer_norm). One hit of
each class in 3000 cases. Before generator v3, (A) was out of reach: programs held no
constant tensor operands (so no two groups differing only in constants), and fusion patterns
were drawn blind to the program (in 1.5% of cases). (B) needs only a ``match_cast`` of a
computed value whose source dies while the view lives (seed 534's casts to fresh dims,
which v2 made too; v3 adds casts to the value's own static type). The same command on the
v2 generator (commit da90165): 49 of 3000 cases judged in 13 s, neither class reached.
Judging every case (no ``--motif-only``, ``--env 0.26.0 --cases 600 --time 240``): 424 cases
in 240 s (0.57 s a case), (B) not yet reached (its first hit is case 535); 2 other fixed
numeric failures (adaptive_avg_pool3d bfloat16, first at case 115). Both first hits are kept as
case JSON in tests/data (tests/test_motifs.py), as generator v3 made them: a later generator
version draws other programs from those seeds. (B) is found at build time now, by the
memory-planning oracle: ``memory_plan_overlap | ... read later through match_cast``.

Generator v4 (the vision ops, nll_loss_backward, dynamic_strided_slice, scans on the last
axis; measured 2026-11-26 on this 2-core VM shared with other jobs):
``--env 0.25.0 --cases 4000 --time 360 --motif-only``: 785 of 4000 cases judged in 200 s;
(A) first at case 480 after 26 s (seed 479, ``numeric | compare | relax.divide:float32``),
2 hits; (B) not reached; 3 other fixed. (B) is rarer under v4: of seeds 4000-15999, the 142
cases holding a ``match_cast`` view, judged on 0.25.0, gave 2 overlaps through
``match_cast`` (seeds 4591 and 7253), one in about 6000 cases (v3: one in 3000).
``--env 0.26.0 --cases 3850 --time 1200 --motif-only --targets cuda,opencl,webgpu``: 756 of
3850 cases judged in 570 s; (C) first at case 3801 after 567 s (seed 3800: a cumsum of a
computed (1, 3, 1) value on the last axis, built for CUDA sm_89 compile-only: the cumsum's
output is placed in the storage its input view still reads); 1 other fixed (dyn_slice on
bool). Of seeds 0-5999 with those targets, 187 cases hold a non-exclusive cumsum and 1 of
them is (C). (C) was out of reach before the oracle: a GPU target here is compile-only, and
the overlap shows only in what the build planned.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from worker.campaign import TARGET_KINDS, make_case  # noqa: E402
from worker.releases import resolve  # noqa: E402
from worker.sandbox_runner import SandboxRunner  # noqa: E402


def const_weights(prog) -> bool:
    return any(n.op == "const" and n.ty.shape for f in prog.functions for n in f.nodes())


def fused_by_pattern(prog) -> bool:
    return any("FuseOpsByPattern" in p for v in prog.meta.get("variants") or []
               for p in v.get("passes") or [])


def views(prog) -> bool:
    return any(n.op == "match_cast" and n.attrs.get("known") is not None
               for f in prog.functions for n in f.nodes())


def scans(prog) -> bool:
    return any(n.op in ("relax.cumsum", "relax.cumprod") for f in prog.functions
               for n in f.nodes())


def classify(prog, outcome) -> str:
    view = (outcome.extra or {}).get("view") if outcome.kind == "memory_plan_overlap" else None
    if view == "vm.builtin.reshape":
        return "C"
    if const_weights(prog) and fused_by_pattern(prog):
        return "A"
    if views(prog) and view in (None, "match_cast"):
        return "B"
    return "other fixed"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="0.25.0", help="the release under test (tvmfuzz env list)")
    ap.add_argument("--seed", type=int, default=0, help="the first case seed")
    ap.add_argument("--cases", type=int, default=400)
    ap.add_argument("--time", type=float, default=180, help="seconds of judging at most")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--motif-only", action="store_true")
    ap.add_argument("--targets", default=",".join(TARGET_KINDS),
                    help="target kinds of the cases (as tvmfuzz run --targets); class C needs "
                         "a GPU one (opencl, webgpu, cuda: compile-only without a GPU)")
    args = ap.parse_args()
    old = SandboxRunner(python=str(resolve(args.env)), timeout=120)
    new = SandboxRunner(timeout=120)
    first: dict = {}
    counts: collections.Counter = collections.Counter()
    judged = 0
    spent = 0.0
    seed = args.seed
    try:
        while seed < args.seed + args.cases and spent < args.time:
            batch = []
            while len(batch) < args.batch and seed < args.seed + args.cases:
                prog = make_case(seed, None, targets=tuple(args.targets.split(",")))
                seed += 1
                if not hasattr(prog, "functions"):
                    continue
                if args.motif_only and not (const_weights(prog) or views(prog)
                                            or scans(prog)):
                    continue
                batch.append(prog)
            t = time.perf_counter()
            outs = old.run_many(batch) if batch else []
            judged += len(batch)
            for prog, o in zip(batch, outs):
                counts[o.verdict] += 1
                if o.verdict != "fail" or o.kind not in ("numeric", "memory_plan_overlap"):
                    continue
                again = new(prog.copy())
                if again.verdict != "pass":
                    continue
                c = classify(prog, o)
                counts[c] += 1
                if c not in first:
                    first[c] = (prog.meta["seed"] - args.seed + 1, spent + time.perf_counter() - t,
                                prog.meta["seed"], o.signature)
            spent += time.perf_counter() - t
            print(f"  {seed - args.seed} cases, {judged} judged, {spent:.0f}s: {dict(counts)}",
                  flush=True)
    finally:
        old.close()
        new.close()
    print(f"release {args.env}, seeds {args.seed}..{seed - 1}, {judged} judged in {spent:.0f}s"
          f"{' (motif cases only)' if args.motif_only else ''}")
    for c in ("A", "B", "C", "other fixed"):
        if c in first:
            pos, secs, s, sig = first[c]
            print(f"{c:12s} first at case {pos} after {secs:.0f}s judging: seed {s}, {sig}; "
                  f"{counts[c]} hits")
        else:
            print(f"{c:12s} not reached")


if __name__ == "__main__":
    main()
