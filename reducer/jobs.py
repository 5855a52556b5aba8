"""The reducer's sandbox job kinds (``"reducer.<name>"``), run by ``worker.jobs.run_job`` in a
forked child. Every job that receives text runs the script guard before parsing it: the text
may come from a user, and TVMScript parsing evaluates Python."""
from __future__ import annotations


def _parse(text: str, near_valid: bool = False):
    import tvm

    from worker.script_guard import check_script

    check_script(text)
    # A near-valid module is ill-formed on purpose: the parser must not refuse it.
    return tvm.script.from_source(text, check_well_formed=not near_valid)


def _print(mod) -> str:
    from fuzz.materialize import to_script

    return to_script(mod)


def ir_canon(job: dict) -> dict:
    """The module printed back by TVM: the form IR passes produce."""
    return {"text": _print(_parse(job["text"], job.get("near_valid", False)))}


def ir_count(job: dict) -> dict:
    """How many elements each IR pass could change in this text."""
    from .passes import registry

    nv = job.get("near_valid", False)
    mod = _parse(job["text"], nv)
    counts = {}
    for name in job.get("passes") or registry.names("ir"):
        try:
            p = registry.by_name("ir", name)(not nv)
            p.hints = job.get("hints") or []
            counts[name] = len(p.targets(mod))
        except Exception:  # noqa: BLE001 - a pass that cannot read this module offers nothing
            counts[name] = 0
    return {"counts": counts}


def ir_apply(job: dict) -> dict:
    """One candidate text per chosen subset (None where TVM refuses the edit)."""
    from .passes import registry
    from .passes.ir.helpers import Refused

    nv = job.get("near_valid", False)
    mod = _parse(job["text"], nv)
    p = registry.by_name("ir", job["pass"])(not nv)
    p.hints = job.get("hints") or []
    texts, why = [], []
    for chosen in job["chosen"]:
        try:
            texts.append(_print(p.apply(mod, set(chosen))))
            why.append("")
        except Refused as e:
            texts.append(None)
            why.append(str(e)[:200])
    return {"texts": texts, "why": why}


def ir_split(job: dict) -> dict:
    """Slices of main cut from one parse of a (large) module (reducer.split): each binding
    the failure names alone and its cone of influence (``hints``: ops; ``names``: words of
    the message, matched against binding variables), then the windows of a binary tree over
    the bindings, ``levels`` deep, halves first. Text None where TVM refuses the slice."""
    from .hints import matches
    from .passes.ir.helpers import Refused, tvm_api
    from .passes.ir.windows import Slicer

    _, _, relax, _ = tvm_api()
    nv = job.get("near_valid", False)
    s = Slicer(_parse(job["text"], nv), not nv)
    n, out = len(s), []

    def add(how: str, keep, lo: int = -1, hi: int = -1, level: int = 0) -> None:
        rec = {"how": how, "lo": lo, "hi": hi, "level": level, "size": len(s.closure(keep))}
        try:
            rec["text"] = _print(s.module(keep))
        except Refused as e:
            rec["text"], rec["why"] = None, str(e)[:200]
        out.append(rec)

    hints, names = job.get("hints") or [], set(job.get("names") or [])

    def named(b) -> bool:
        op = getattr(b.value, "op", None) if isinstance(b.value, relax.Call) else None
        return (b.var.name in names
                or (op is not None and hasattr(op, "name") and matches(str(op.name), hints)))

    idx = [i for i, b in enumerate(s.bs) if named(b)] if (hints or names) else []
    if 0 < len(idx) <= int(job.get("max_named", 4)):
        for i in idx:
            add("binding", [i], i, i + 1)
        for i in idx:
            c = s.cone(i)
            if 1 < len(c) < n:
                add("cone", c, i, i + 1)
    nodes = [(0, n)]
    for level in range(1, int(job.get("levels", 3)) + 1):
        nodes = [h for lo, hi in nodes if hi - lo > 1
                 for h in ((lo, (lo + hi + 1) // 2), ((lo + hi + 1) // 2, hi))]
        for lo, hi in nodes:
            add("window", range(lo, hi), lo, hi, level)
    return {"bindings": n, "slices": out}


KINDS = {"reducer.ir_canon": ir_canon, "reducer.ir_count": ir_count,
         "reducer.ir_apply": ir_apply, "reducer.ir_split": ir_split}
