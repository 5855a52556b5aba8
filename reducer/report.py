"""report.md (ready to paste into a TVM GitHub issue) and the other result files of a
reduction: case.json, case.py, repro.py, reduce.json. All writes are atomic and keep what was
there before (``reducer.output``)."""
from __future__ import annotations

import json
import platform
from typing import Optional

from worker.signature import normalize_message

from .repro import failing_variants, repro_text, versions


def title(outcome: dict) -> str:
    kind, stage = outcome.get("kind", ""), outcome.get("stage", "")
    msg = normalize_message(outcome.get("message", ""))[:140]
    etype = outcome.get("error_type", "")
    fpass = outcome.get("extra", {}).get("failing_pass", "")
    where = f" in {fpass}" if fpass else (f" at {stage}" if stage else "")
    site = outcome.get("throw_site", "")
    site = f" ({site.rsplit('/', 1)[-1]})" if site else ""
    if kind == "ill_formed":
        text = "well_formed rejects a module built through the Relax BlockBuilder"
    elif kind == "verifier_build" and stage == "well_formed":
        text = "A module well_formed rejects still builds and runs"
    elif kind == "verifier_build":
        text = f"well_formed accepts a module that fails to build{where}: {msg}"
    elif kind == "pass_ill_formed":
        text = f"{fpass or 'A pass'} produces ill-formed Relax IR"
    elif kind == "numeric":
        key = outcome.get("extra", {}).get("numeric_key", "")
        text = f"Wrong result{' of ' + key if key else ''} on {outcome.get('target', '')}"
    elif kind == "roundtrip":
        text = f"TVMScript print/parse round trip: {msg}"
    elif kind in ("signal", "hang", "oom"):
        what = {"signal": f"Crash ({outcome.get('error_type') or 'signal'})",
                "hang": "Hang", "oom": "Runaway memory use"}[kind]
        text = f"{what} compiling or running a Relax module"
    else:
        text = f"{etype + ' ' if etype else ''}{where.strip() or 'failure'}: {msg}{site}"
    return f"[Bug][Relax] {text}"


def _expected_text(outcome: dict) -> str:
    kind = outcome.get("kind", "")
    if kind == "numeric":
        return "The outputs agree with numpy's (within the usual floating-point tolerance)."
    if kind == "verifier_build" and outcome.get("stage") == "well_formed":
        return ("Verifier and build agree: a module `relax.analysis.well_formed` rejects is "
                "rejected by the build too, or the verifier accepts it.")
    if kind == "ill_formed":
        return "`relax.analysis.well_formed` accepts the module (TVM's own builder made it)."
    if kind == "roundtrip":
        return "Printing with `show_meta=True` and parsing back gives a structurally equal module."
    return ("The module is well-formed (`relax.analysis.well_formed` accepts it), so it builds "
            "and runs, or the build reports a user-facing error instead of an internal one.")


def _variant_lines(variants: list) -> list[str]:
    out = []
    for v in variants:
        passes = ", ".join(v.get("passes") or []) or "none"
        out.append(f"- target `{json.dumps(v.get('target', {}))}`, pipeline "
                   f"`{v.get('pipeline', 'default')}`, pass list: {passes}, exec mode "
                   f"`{v.get('exec_mode', 'bytecode')}`")
    return out


def report_markdown(red, variants: list) -> str:
    o = red.outcome
    v = versions()
    program = red.reduced if red.kind == "case" else None
    meta = (program.meta if program is not None else {}) or {}
    detail = (o.get("detail") or o.get("message") or "").strip()
    detail = "\n".join(detail.splitlines()[-40:])
    site = o.get("throw_site", "")
    fpass = o.get("extra", {}).get("failing_pass", "")
    rep = o.get("reproduction", {})
    st = red.stats
    lines = [
        f"# {title(o)}",
        "",
        "### Expected behavior",
        "",
        _expected_text(o),
        "",
        "### Actual behavior",
        "",
        f"Stage `{o.get('stage', '')}`"
        + (f", failing pass `{fpass}`" if fpass else "")
        + (f", thrown at `{site}`" if site else "") + ":",
        "",
        "```",
        f"{o.get('error_type') + ': ' if o.get('error_type') else ''}{o.get('message', '')}",
        "```",
        "",
        "<details><summary>Full error</summary>",
        "",
        "```",
        detail,
        "```",
        "</details>",
        "",
        "### Environment",
        "",
        f"- TVM: apache-tvm {v['apache-tvm'] or '(unknown)'} (PyPI), apache-tvm-ffi "
        f"{v['apache-tvm-ffi'] or '(unknown)'}",
        f"- Python {platform.python_version()}, numpy {v['numpy']}, "
        f"{platform.system()} {platform.machine()}",
        "- Build:",
        *_variant_lines(variants),
        "",
        "### Steps to reproduce",
        "",
        "```bash",
        f"pip install apache-tvm=={v['apache-tvm']} numpy" if v["apache-tvm"] else
        "pip install apache-tvm numpy",
        "python repro.py   # exit 1: reproduces; 0: fixed; 2: fails differently",
        "```",
        "",
        "`repro.py` (attached) parses the module below, builds it as listed above, runs it on "
        "deterministic random inputs and reports the failure."
        + (" The module is ill-formed on purpose (a verifier/build disagreement), so it is "
           "parsed with `tvm.script.from_source(text, check_well_formed=False)`."
           if meta.get("mode") == "near-valid" else ""),
        "",
        "### Reduced module",
        "",
        "```python",
        red.script.strip() if red.script else "(could not be printed)",
        "```",
        "",
        "### How it was found",
        "",
        f"Found by tvmfuzz"
        + (f" (generator v{meta.get('generator')}, seed {meta.get('seed')}, mode "
           f"{meta.get('mode')}"
           + (f", mutations {', '.join(meta.get('mutations') or [])}" if meta.get("mutations")
              else "") + ")" if meta else " from a user's TVMScript file")
        + ".",
    ]
    if st.get("bindings_before") is not None and st.get("oracle_calls") is not None:
        lines.append(f"Reduced by `tvmfuzz reduce` from {st['bindings_before']} to "
                     f"{st['bindings_after']} bindings ({st['oracle_calls']} test runs), "
                     "keeping the failure's signature.")
    if rep:
        lines.append(f"Reproduced {rep.get('reproduced')} of {rep.get('replays')} runs.")
    lines += ["", f"Signature: `{red.signature}`", ""]
    return "\n".join(lines)


def write_outputs(red, variants: Optional[list] = None) -> None:
    from .output import OutDir

    w = red.writer or OutDir(red.out_dir)
    program = red.reduced if red.kind == "case" else None
    variants = variants or (red.stats.get("variants") if red.kind == "script" else None) \
        or failing_variants(program, red.outcome)
    if program is not None:
        w.write("case.json", program.dumps())
    if red.script:
        w.write("case.py", red.script)
        w.write("repro.py", repro_text(red.script, red.outcome, program, variants,
                                       input_seed=red.stats.get("input_seed") or 0,
                                       near_valid=bool(red.stats.get("near_valid")),
                                       inputs_by_name=red.stats.get("inputs_by_name")),
                mode=0o755)
    w.write("report.md", report_markdown(red, variants))
    w.write("outcome.json", json.dumps(red.outcome, indent=1, default=str))
    from .api import stats_json

    w.write("reduce.json", stats_json(red))

