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


KINDS = {"reducer.ir_canon": ir_canon, "reducer.ir_count": ir_count,
         "reducer.ir_apply": ir_apply}
