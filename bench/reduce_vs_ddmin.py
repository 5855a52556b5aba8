"""The IR-aware reducer against plain line-level ddmin over TVMScript text, on the same cases.

    python bench/reduce_vs_ddmin.py CAMPAIGN_DIR [--limit 10] [--max-calls 2000]

For each finding (``findings/<kind>/case_*.json`` with its printed ``.py``; kind "generator"
skipped) three reductions, each with its own oracle (sandbox runs, outcomes cached by content
hash, so a repeated candidate is free for all three):

* model: ``reducer.reduce_case`` on the program model (what ``tvmfuzz reduce case.json`` does);
* ir:    ``reducer.reduce_script`` on the case's TVMScript, judged under the case's variants;
* ddmin: ``reducer.linedd.line_ddmin`` over the lines of that TVMScript, same judge: a
         candidate is interesting when it fails with the original text's signature.

Reported: oracle calls (sandbox runs of distinct candidates; the 3 stability replays and the
final replays are not counted for any of them), final size in bindings of the TVMScript
(``reducer.size.script_bindings``) and wall time. The target: at most 1/5 of line ddmin's
oracle calls with a result no larger.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.reduce_campaign import cases  # noqa: E402
from fuzz.model import Program  # noqa: E402
from fuzz.outcome import Outcome  # noqa: E402
from reducer.api import ReduceError, reduce_case, reduce_script  # noqa: E402
from reducer.linedd import line_ddmin  # noqa: E402
from reducer.oracle import Oracle, ScriptSubject  # noqa: E402
from reducer.pool import SandboxPool  # noqa: E402
from reducer.repro import failing_variants  # noqa: E402
from reducer.size import script_bindings  # noqa: E402


def by_name(prog: Program) -> dict:
    """Input shapes by parameter name (a case's erased parameters have none in the text)."""
    from fuzz import dims as D
    from fuzz.inputs import make_inputs

    env, _ = make_inputs(prog, prog.meta.get("seed") or 0)
    return {p.name: [[D.evaluate(d, env) for d in p.runtime_ty.shape], p.runtime_ty.dtype,
                     p.lo, p.hi] for p in prog.main.params}


def ddmin_case(pool: SandboxPool, text: str, variants: list, seed: int, near_valid: bool,
               max_calls: int, inputs: dict) -> dict:
    subject = ScriptSubject(variants, seed, near_valid, inputs)
    oracle = Oracle(subject, pool)
    first = oracle.run([text])[0]
    if first.verdict != "fail":
        return {"error": f"the script alone does not fail ({first.verdict})"}
    oracle.target_sig = first.signature
    t0 = time.monotonic()
    reduced, _ = line_ddmin(text, oracle.test, max_calls=max_calls)
    return {"calls": oracle.stats["calls"], "not_python": oracle.stats["guard_refused"],
            "bindings": script_bindings(reduced),
            "lines": len(reduced.splitlines()), "seconds": round(time.monotonic() - t0, 1),
            "capped": oracle.stats["calls"] >= max_calls, "signature": first.signature}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("campaign", type=Path)
    ap.add_argument("--limit", type=int, default=10)
    ap.add_argument("--max-calls", type=int, default=2000)
    ap.add_argument("--no-ir", action="store_true", help="skip the IR-on-text reduction")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = []
    with SandboxPool(1, 60.0) as pool:
        for path in cases(args.campaign, args.limit):
            script_path = path.with_suffix(".py")
            if not script_path.exists():
                continue
            prog = Program.loads(path.read_text())
            text = script_path.read_text()
            o = json.loads(path.with_name(path.stem + ".outcome.json").read_text())
            variants = failing_variants(prog, Outcome.from_json(o))
            seed = prog.meta.get("seed") or 0
            near_valid = prog.meta.get("mode") == "near-valid"
            row = {"case": f"{path.parent.name}/{path.name}",
                   "bindings_before": script_bindings(text)}
            try:
                t0 = time.monotonic()
                red = reduce_case(prog, pool=pool, write=False)
                row["model"] = {"calls": red.stats["oracle_calls"],
                                "bindings": script_bindings(red.script) if red.script else None,
                                "seconds": round(time.monotonic() - t0, 1)}
            except ReduceError as e:
                row["model"] = {"error": str(e)}
            if not args.no_ir:
                try:
                    t0 = time.monotonic()
                    red = reduce_script(text, pool=pool, write=False, variants=variants,
                                        input_seed=seed, near_valid=near_valid,
                                        inputs_by_name=by_name(prog))
                    row["ir"] = {"calls": red.stats["oracle_calls"],
                                 "bindings": script_bindings(red.reduced),
                                 "seconds": round(time.monotonic() - t0, 1)}
                except ReduceError as e:
                    row["ir"] = {"error": str(e)}
            row["ddmin"] = ddmin_case(pool, text, variants, seed, near_valid, args.max_calls,
                                      by_name(prog))
            rows.append(row)
            print(json.dumps(row), flush=True)
    ok = [r for r in rows if "calls" in r["model"] and "calls" in r["ddmin"]]
    if ok:
        ratio = [r["model"]["calls"] / max(1, r["ddmin"]["calls"]) for r in ok]
        med = statistics.median
        ir = [r["ir"]["calls"] for r in ok if "calls" in r.get("ir", {})]
        print(f"\n{len(ok)} cases. oracle calls, median: model "
              f"{med(r['model']['calls'] for r in ok)}"
              + (f", ir {med(ir)}" if ir else "")
              + f", line ddmin {statistics.median(r['ddmin']['calls'] for r in ok)}; "
              f"model/ddmin calls median {statistics.median(ratio):.3f}, max {max(ratio):.3f}")
        print(f"total calls: model {sum(r['model']['calls'] for r in ok)}, line ddmin "
              f"{sum(r['ddmin']['calls'] for r in ok)}")
        print("final bindings (model / ir / ddmin): " + "; ".join(
            f"{r['model']['bindings']}/{r.get('ir', {}).get('bindings', '-')}/"
            f"{r['ddmin']['bindings']}" for r in ok))
        no_larger = sum(r["model"]["bindings"] is not None
                        and r["model"]["bindings"] <= r["ddmin"]["bindings"] for r in ok)
        print(f"model result no larger than line ddmin's: {no_larger}/{len(ok)}; wall time "
              f"total: model {sum(r['model']['seconds'] for r in ok):.0f} s, line ddmin "
              f"{sum(r['ddmin']['seconds'] for r in ok):.0f} s")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
