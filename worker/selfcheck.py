"""Check catalogue specs against the installed TVM: for programs built from one op, the shape
rule must equal the type TVM infers, and the numpy reference must match TVM's result.

Used by the property tests (tests/test_catalogue.py) and by ``tvmfuzz catalogue --check``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from fuzz import dims as D
from fuzz.choice import RandomChooser
from fuzz.catalogue import CATALOGUE
from fuzz.generate import single_op_program
from fuzz.inputs import make_inputs
from fuzz.model import Program, TupleTy, Ty


@dataclass
class Problem:
    op: str
    seed: int
    what: str            # "shape-rule", "build", "numeric", "no-sample"
    detail: str
    program: Optional[Program] = None


def _same_ty(ours: Ty, tvms: Ty, env: dict) -> bool:
    from fuzz.materialize import eval_dim_text

    if isinstance(ours, TupleTy) or isinstance(tvms, TupleTy):
        return (isinstance(ours, TupleTy) and isinstance(tvms, TupleTy)
                and len(ours.fields) == len(tvms.fields)
                and all(_same_ty(a, b, env) for a, b in zip(ours.fields, tvms.fields)))
    if ours.dtype != tvms.dtype or tvms.shape is None or len(ours.shape) != len(tvms.shape):
        return False
    return all(D.evaluate(a, env) == eval_dim_text(b, env) for a, b in zip(ours.shape, tvms.shape))


def check_op(op: str, seeds=range(10), run: bool = True, runner=None) -> list[Problem]:
    """Problems of ``op``'s spec on one-op programs from ``seeds``. Types are checked here;
    build and run go through the sandbox (``runner``: a worker.sandbox_runner.SandboxRunner,
    made and closed here when not given), since some of them crash TVM's process."""
    from fuzz.materialize import materialize, struct_info_of

    problems: list[Problem] = []
    progs = []
    for seed in seeds:
        prog = single_op_program(op, RandomChooser(seed))
        if prog is None:
            continue
        prog.meta["seed"] = seed
        progs.append(prog)
        try:
            mod = materialize(prog)
        except Exception as e:  # noqa: BLE001
            problems.append(Problem(op, seed, "materialize", f"{type(e).__name__}: {e}"[:500], prog))
            continue
        env, _ = make_inputs(prog, seed)
        inferred = struct_info_of(mod)
        for n in prog.main.nodes():
            t = inferred.get(n.name)
            if t is not None and n.ty is not None and not _same_ty(n.ty, t, env):
                problems.append(Problem(op, seed, "shape-rule",
                                        f"{n.name}: rule {n.ty}, TVM {t}", prog))
    if not progs:
        problems.append(Problem(op, -1, "no-sample", "sample() never succeeded"))
    if run and progs:
        from .sandbox_runner import SandboxRunner

        own = runner is None
        runner = runner or SandboxRunner(timeout=120)
        try:
            outcomes = runner.run_many(progs)
        finally:
            if own:
                runner.close()
        for prog, o in zip(progs, outcomes):
            if o.verdict != "pass":
                what = o.kind if o.kind not in ("crash", "signal", "hang") else o.stage
                problems.append(Problem(op, prog.meta["seed"], what,
                                        f"{o.error_type}: {o.message}"[:500], prog))
    return problems


def main(argv=None) -> int:
    """``python -m worker.selfcheck [OP ...] [--seeds N]``: print problems per op."""
    import argparse
    import collections

    ap = argparse.ArgumentParser(prog="python -m worker.selfcheck")
    ap.add_argument("ops", nargs="*")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--family")
    a = ap.parse_args(argv)
    ops = a.ops or sorted(n for n, s in CATALOGUE.items() if not a.family or s.family == a.family)
    from .sandbox_runner import SandboxRunner

    bad = 0
    runner = SandboxRunner(timeout=120)
    for op in ops:
        ps = check_op(op, range(a.seeds), runner=runner)
        if ps:
            bad += 1
            kinds = collections.Counter(p.what for p in ps)
            print(f"{op}: {dict(kinds)}")
            for p in ps[:3]:
                dt = sorted({t.dtype for t in (q.ty for q in p.program.main.params)}) \
                    if p.program else []
                print(f"   seed={p.seed} {p.what} dtypes={dt}: {p.detail[:300]}")
    runner.close()
    print(f"checked {len(ops)} ops, {bad} with problems")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
