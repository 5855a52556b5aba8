"""Random s_tir schedules on the standard modules: what applies, what TVM gets wrong.

    python bench/schedule_stats.py [--seeds 200] [--start 0] [--steps 6] [--stable]
                                   [--modules matmul,relax_mm_add] [--json out.json]

Each (module, seed) runs in a forked child (a schedule can segfault TVM): random_schedule,
the replay check (apply_schedule gives a structurally equal module), build for llvm, run on
random inputs and compare with numpy. Prints, per primitive: how often a step was tried,
applied, refused (ScheduleError), skipped (nothing to apply it to); how often the primitive
itself raised something else (``crash``) or killed the process (``signal``); and how many
schedules that applied it then failed to build (``build``), computed wrong values
(``mismatch``) or died running (``run-sig``). One bad primitive in a schedule charges every
primitive it applied, so read those columns next to the known bugs (worker.tir_schedule
.KNOWN_BUGS) and the minimal reproductions in the report. ``--stable`` draws from
STABLE_PRIMITIVES only.
"""
import argparse
import collections
import importlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker import tir_schedule as ts  # noqa: E402
from worker.sandbox import call_forked  # noqa: E402


def first_line(e: BaseException) -> str:
    s = str(e).strip()
    return f"{type(e).__name__}: {s.splitlines()[0][:160] if s else ''}"


def one(module: str, seed: int, steps: int, prims, progress: str) -> dict:
    """In the child. ``progress`` gets the prim being applied, so a signal can be charged."""
    import numpy as np
    import tvm_ffi

    orig = ts._apply_step

    def traced(fmod, step, sch=None):
        with open(progress, "w") as f:
            f.write(step["prim"])
        r = orig(fmod, step, sch)
        with open(progress, "w") as f:
            f.write("")
        return r

    ts._apply_step = traced
    stats = ts.ScheduleStats()
    mod = ts.STANDARD[module]()
    res: dict = {"module": module, "seed": seed}
    try:
        new, applied = ts.random_schedule(mod, random.Random(seed), steps=steps, stats=stats,
                                          primitives=prims)
    except Exception as e:  # noqa: BLE001
        step = getattr(e, "schedule_step", None) or {}
        res.update(outcome="crash", prim=step.get("prim"), message=first_line(e),
                   stats=stats.to_json(), applied=getattr(e, "schedule_applied", []),
                   step=step)
        return res
    res.update(stats=stats.to_json(), applied=applied,
               reasons=[[p, r, n] for (p, r), n in stats.reasons.items()])
    with open(progress, "w") as f:
        f.write("@replay\n" + json.dumps(applied))
    res["replay_equal"] = bool(tvm_ffi.structural_equal(ts.apply_schedule(mod, applied), new))
    with open(progress, "w") as f:
        f.write("@build\n" + json.dumps(applied))
    try:
        out, ref = ts.run_standard(module, new, seed)
    except Exception as e:  # noqa: BLE001
        msg = first_line(e)
        res.update(outcome="noise" if ts.is_schedule_noise(str(e)) else "build", message=msg)
        return res
    ok = np.allclose(out, ref, rtol=1e-4, atol=1e-4)
    res["outcome"] = "ok" if ok or not ts.is_exact(applied) else "mismatch"
    return res


def forked(fn, *args) -> dict:
    """``fn(*args)`` in a forked child, as the bench's outcome record."""
    r = call_forked(fn, *args, quiet=False)
    if "signal" in r:
        return {"outcome": "signal", "signal": r["signal"]}
    if "error" in r:
        msg = r["message"].strip()
        return {"outcome": "error", "message": f"{r['error']}: "
                f"{msg.splitlines()[0][:160] if msg else ''}"}
    return r["ok"] or {}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--stable", action="store_true")
    ap.add_argument("--modules", default="matmul,relax_mm_add")
    ap.add_argument("--json")
    a = ap.parse_args()
    importlib.import_module("tvm")   # imported once, before the children fork

    prims = ts.primitives_for("llvm", ts.STABLE_PRIMITIVES if a.stable else None)
    cols = ("tried", "applied", "refused", "skipped", "crash", "signal", "build", "mismatch",
            "run-sig")
    table = {p: collections.Counter() for p in prims}
    outcomes = collections.Counter()
    messages = collections.Counter()
    reasons = collections.Counter()
    results = []
    progress = tempfile.mktemp(prefix="schedstats")
    t0 = time.time()
    for module in a.modules.split(","):
        for seed in range(a.start, a.start + a.seeds):
            open(progress, "w").close()
            r = forked(one, module, seed, a.steps, prims, progress)
            if r["outcome"] == "signal":
                stage, _, applied = open(progress).read().partition("\n")
                r["stage"] = stage
                r["applied"] = json.loads(applied) if applied else []
                if stage and not stage.startswith("@"):
                    r["prim"] = stage
                else:
                    r["outcome"] = "run-sig"
            r.setdefault("module", module)
            r.setdefault("seed", seed)
            results.append(r)
            outcomes[(module, r["outcome"])] += 1
            for p, c in r.get("stats", {}).items():
                for k in ("tried", "applied", "refused", "skipped"):
                    table[p][k] += c[k]
            for p, why, n in r.get("reasons", []):
                reasons[(p, why)] += n
            if r["outcome"] in ("crash", "signal") and r.get("prim"):
                table[r["prim"]][r["outcome"]] += 1
            if r["outcome"] in ("build", "mismatch", "run-sig"):
                for p in {s["prim"] for s in r.get("applied", [])}:
                    table[p][r["outcome"]] += 1
            if r["outcome"] not in ("ok",):
                messages[(r["outcome"], r.get("prim") or "", r.get("message", ""))] += 1
            if r.get("replay_equal") is False:
                outcomes[(module, "replay-not-equal")] += 1
    os.unlink(progress)
    dt = time.time() - t0

    n = a.seeds * len(a.modules.split(","))
    print(f"{n} schedules ({a.seeds} seeds x {a.modules}), {a.steps} steps per PrimFunc, "
          f"{'stable' if a.stable else 'all'} primitives, {dt:.0f} s")
    print(f"{'primitive':24s}" + "".join(f"{c:>9s}" for c in cols))
    for p in sorted(table, key=lambda p: -table[p]["tried"]):
        print(f"{p:24s}" + "".join(f"{table[p][c]:9d}" for c in cols))
    print("\noutcomes:", ", ".join(f"{m}/{o}={k}" for (m, o), k in sorted(outcomes.items())))
    print("\nfailures (outcome, primitive, first line):")
    for (o, p, m), k in messages.most_common():
        print(f"  {k:4d}  {o:8s} {p:22s} {m[:150]}")
    print("\nmost common refusals:")
    for (p, why), k in reasons.most_common(25):
        print(f"  {k:5d}  {p:22s} {why[:110]}")
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
