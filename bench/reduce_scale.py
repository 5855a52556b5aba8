"""How reducing a TVMScript module grows with its size.

    python bench/reduce_scale.py [--sizes 1000,5000,20000] [--jobs 1] [--no-split]
                                 [--out DIR] [--json FILE]

Each module is a DAG of float32 ``R.add`` bindings on 0-d tensors (each add reads the two
values before it), with one real TVM 0.27 failure buried at 45% of it: ``R.argmax`` of a 0-d
tensor passes type inference but LegalizeOps refuses it ("Cannot reduce a 0 dim Tensor",
deterministic, and cheap: it fails before any code is generated); its result goes on through
``R.astype`` into the chain, so it is not dead. The message names neither the op nor the
binding, so the reducer has no hint and must cut by dependency-aware windows
(``reducer.split``). For each size: the wall time of ``reducer.reduce_script`` (from the
first replay to the final replays), oracle calls, sandbox jobs that parse the module, the
result's size, and the growth of time and calls from one size to the next.
``--no-split`` runs the delta passes alone (the path before reducer.split), for comparison.

Measured (TVM 0.27, -j 1, 2 cores shared with other jobs, load average 4-6; TVM alone parses
20,000 of these bindings in 51 s on a quieter moment of the same machine):

                       split                 |       passes alone
    bindings   seconds  calls  split/pass jobs  |  seconds  calls  pass jobs
       1,000      15.9     15        4 / 4      |    104.2     19         28
       5,000     110.4     16        4 / 4      |    712.9     23         32
      20,000     656.2     18        5 / 4      |  not run (~30 pass jobs, each
      20,000     640.4     18        5 / 4      |  parsing 20,000 bindings)

(The two 20,000 runs: first replay 109 s and 204 s, split 532 s and 418 s, by the load.)

At 20,000: the first replay 109 s (the input is replayed once, being slow), the split 532 s
(the first round's job parses 20,000 bindings; windows without the bug are judged in full:
built, run, round-tripped), the passes on the one binding left ~10 s, the final replays.
Every result is the lone ``R.argmax`` with its operand as a parameter, reproducing 3/3. Time
grows about x6 per x4-5 bindings (TVM's parse is superlinear); oracle calls grow by one or
two per doubling.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reducer.api import reduce_script  # noqa: E402


def chain_module(n: int, bad_at: int | None = None) -> str:
    """A module of ``n`` adds (plus the failing argmax and its astype at ``bad_at``)."""
    bad_at = int(n * 0.45) if bad_at is None else bad_at
    lines = ["# from tvm.script import ir as I", "# from tvm.script import relax as R", "",
             "@I.ir_module", "class Module:", "    @R.function",
             '    def main(x: R.Tensor((), "float32"), y: R.Tensor((), "float32")):',
             "        with R.dataflow():"]
    prev, prev2 = "x", "y"
    for i in range(n):
        v = f"v{i}"
        if i == bad_at:
            lines.append(f"            {v}_i = R.argmax({prev})")
            lines.append(f'            {v} = R.astype({v}_i, "float32")')
        else:
            lines.append(f"            {v} = R.add({prev}, {prev2})")
        prev2, prev = prev, v
    lines += [f"            R.output({prev})", f"        return {prev}"]
    return "\n".join(lines) + "\n"


def run(n: int, jobs: int, split: bool, out: Path, log, budget=None) -> dict:
    text = chain_module(n)
    t0 = time.monotonic()
    red = reduce_script(text, jobs=jobs, out_dir=out / f"n{n}", log=log, split=split,
                        time_budget=budget)
    st = red.stats
    return {"bindings": n, "seconds": round(time.monotonic() - t0, 1),
            "oracle_calls": st["oracle_calls"], "cache_hits": st["cache_hits"],
            "replays": st["replays"] + st["final_replays"],
            "split_jobs": st.get("split_jobs", 0), "split_calls": st.get("split_calls", 0),
            "split_seconds": st.get("split_seconds", 0.0),
            "count_jobs": st.get("count_jobs", 0), "apply_jobs": st.get("apply_jobs", 0),
            "bindings_after": st["bindings_after"], "stopped_early": st["stopped_early"],
            "reproduced": (red.outcome.reproduction or {}).get("reproduced"),
            "reduced": red.script}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-split", action="store_true", help="delta passes only (the old path)")
    ap.add_argument("--out", default=None, help="where the reductions are written")
    ap.add_argument("--json", default=None, help="also write the figures to this file")
    ap.add_argument("--time", type=float, default=None,
                    help="seconds per reduction, then keep the smallest so far (as --time)")
    ap.add_argument("--quiet", action="store_true", help="no reducer log")
    a = ap.parse_args(argv)
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="reduce-scale-"))
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        print(f"== {n} bindings", flush=True)
        r = run(n, a.jobs, not a.no_split, out,
                (lambda s: None) if a.quiet else (lambda s: print("   ", s, flush=True)),
                a.time)
        rows.append(r)
        print(f"   {r['seconds']} s, {r['oracle_calls']} oracle calls "
              f"({r['split_calls']} by the split, {r['split_jobs']} split jobs in "
              f"{r['split_seconds']} s), {r['count_jobs'] + r['apply_jobs']} pass jobs, "
              f"-> {r['bindings_after']} bindings, reproduced {r['reproduced']}/3"
              + (" (stopped at --time)" if r["stopped_early"] else ""),
              flush=True)
        if a.json:
            Path(a.json).write_text(json.dumps(rows, indent=1))
    print(f"\n{'bindings':>9} {'seconds':>8} {'calls':>6} {'split jobs':>10} "
          f"{'pass jobs':>9} {'after':>6}  growth (time, calls) vs the previous size")
    prev = None
    for r in rows:
        grow = "" if prev is None else \
            (f"  x{r['bindings'] / prev['bindings']:.0f} bindings: time x"
             f"{r['seconds'] / max(prev['seconds'], 0.1):.1f}, calls x"
             f"{r['oracle_calls'] / max(prev['oracle_calls'], 1):.2f}")
        print(f"{r['bindings']:>9} {r['seconds']:>8} {r['oracle_calls']:>6} "
              f"{r['split_jobs']:>10} {r['count_jobs'] + r['apply_jobs']:>9} "
              f"{r['bindings_after']:>6}{grow}")
        prev = r
    print(f"\nreductions written under {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
