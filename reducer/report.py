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
    elif kind == "shape_inference":   # the numbers are the bug here: keep them
        text = f"Shape inference: {outcome.get('message', '')}"
    elif kind == "late_validation":
        text = (f"A malformed buffer is accepted at construction and rejected only{where}: "
                f"{msg}{site}")
    elif kind in ("signal", "hang", "oom"):
        what = {"signal": f"Crash ({outcome.get('error_type') or 'signal'})",
                "hang": "Hang", "oom": "Runaway memory use"}[kind]
        text = f"{what} compiling or running a Relax module"
    else:
        text = f"{etype + ' ' if etype else ''}{where.strip() or 'failure'}: {msg}{site}"
    tir = outcome.get("extra", {}).get("variant", {}).get("pipeline") == "tir"
    return f"[Bug][{'TIR' if tir else 'Relax'}] {text}"


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
    if kind == "shape_inference":
        return ("The type TVM infers for the op's result is the shape and dtype the op computes "
                "(numpy's semantics for the same call), so the annotation in the module below "
                "matches the tensor the op returns at run time.")
    if kind == "late_validation":
        return ("The malformed buffer declaration is refused where it is made (parsing, "
                "`T.match_buffer`/`T.decl_buffer`) or by the well-formedness check, with a message "
                "naming the buffer; not by an internal check in a later pass.")
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


def affected_section(result: Optional[dict] = None, checked: str = "") -> list[str]:
    """The "Affected versions" section: a ``tvmfuzz bisect`` result as a table, or, without
    one, the one release the finding was checked on."""
    lines = ["### Affected versions", ""]
    if not result:
        lines += [f"Checked on apache-tvm {checked or '(unknown)'} only. `tvmfuzz env add "
                  "0.25.0` installs another release and `tvmfuzz bisect case.json` replays the "
                  "case on every installed one.", ""]
        return lines
    from worker.bisect import summary

    what = "case" if result.get("kind") == "case" else "module"
    lines += [f"`tvmfuzz bisect` replayed the {what} on each installed release (signatures "
              "compared up to the throw site's line number and dtype spelling): "
              + summary(result) + ".", "",
              "| release | verdict | detail |", "|---|---|---|"]
    for r in result["releases"]:
        detail = {"different": f"`{r.get('signature', '')}`", "error": r.get("message", ""),
                  "absent": r.get("message") or "passes"}.get(r["verdict"], "")
        detail = detail.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| apache-tvm {r.get('tvm') or r['version']}"
                     f"{' (default)' if r.get('default') else ''} | {r['verdict']} | {detail} |")
    return lines + [""]


def with_affected(text: str, section: list[str]) -> str:
    """report.md text with its "Affected versions" section replaced (or added before "Steps to
    reproduce")."""
    lines = text.splitlines()
    head = "### Affected versions"
    if head in lines:
        i = lines.index(head)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("### ")), len(lines))
        lines[i:j] = section
    else:
        k = next((k for k, ln in enumerate(lines) if ln == "### Steps to reproduce"), len(lines))
        lines[k:k] = section
    return "\n".join(lines) + "\n"


def update_affected(out_dir, result: dict) -> None:
    """Write ``bisect.json`` into a report directory and update its report.md's section."""
    from pathlib import Path

    from .output import write_text

    d = Path(out_dir)
    write_text(d / "bisect.json", json.dumps(result, indent=1) + "\n")
    report = d / "report.md"
    if report.is_file():
        write_text(report, with_affected(report.read_text(), affected_section(result)))


def report_markdown(red, variants: list, affected: Optional[dict] = None) -> str:
    o = red.outcome
    v = versions(red.stats.get("python"))
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
        *affected_section(affected, v["apache-tvm"]),
        "### Steps to reproduce",
        "",
        "```bash",
        f"pip install apache-tvm=={v['apache-tvm']} numpy" if v["apache-tvm"] else
        "pip install apache-tvm numpy",
        "python repro.py   # exit 1: reproduces; 0: fixed; 2: fails differently",
        "```",
        "",
        ("`repro.py` (attached) parses the module below and compares the type TVM infers "
         "for the op's result with the one numpy's semantics give."
         if o.get("kind") == "shape_inference" else
         "`repro.py` (attached) parses the module below, builds it as listed above, runs it on "
         "deterministic random inputs and reports the failure.")
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
        *_tir_lines(program, o, st),
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
        unit = "statements" if program is not None and program.ir == "tir" else "bindings"
        lines.append(f"Reduced by `tvmfuzz reduce` from {st['bindings_before']} to "
                     f"{st['bindings_after']} {unit} ({st['oracle_calls']} test runs), "
                     "keeping the failure's signature.")
    if rep:
        lines.append(f"Reproduced {rep.get('reproduced')} of {rep.get('replays')} runs.")
    lines += ["", f"Signature: `{red.signature}`", ""]
    return "\n".join(lines)


def _tir_lines(program, o: dict, st: dict) -> list[str]:
    """For a TIR case: why a malformed buffer matters, and the schedule that was applied."""
    if program is None or program.ir != "tir":
        return []
    meta, out = program.meta, []
    if o.get("kind") == "late_validation":
        fpass = o.get("extra", {}).get("failing_pass") or "a later pass"
        out += [f"The PrimFunc is malformed on purpose ({meta.get('invalid')}). TVM accepted it "
                "when parsing it and in its well-formedness check, and rejected it only in "
                f"`{fpass}`: validation happens too late (the error should come from the "
                "buffer's construction or the verifier, with a message that names the buffer).",
                ""]
    steps = (meta.get("schedule") or {}).get("applied") or []
    if steps:
        trace = st.get("schedule_trace") or ""
        out += [f"Schedule: {len(steps)} s_tir primitive(s) applied before the build: "
                + ", ".join(f"`{s.get('prim')}`" for s in steps) + ".", ""]
        if trace:
            out += ["```python", "sch = tvm.s_tir.Schedule(mod)", trace, "```", ""]
    passes = [p for v in meta.get("variants") or [] for p in v.get("passes") or []]
    if passes:
        out += ["TIR passes applied before `tvm.tirx.build`: " + ", ".join(passes) + ".", ""]
    return out


def write_outputs(red, variants: Optional[list] = None, affected: Optional[dict] = None) -> None:
    from .output import OutDir

    w = red.writer or OutDir(red.out_dir)
    program = red.reduced if red.kind == "case" else None
    variants = variants or (red.stats.get("variants") if red.kind == "script" else None) \
        or failing_variants(program, red.outcome)
    if program is not None:
        w.write("case.json", program.dumps())
    if red.script and program is not None and program.ir == "tir":
        from .tir_repro import tir_repro_text

        w.write("case.py", red.script)
        w.write("repro.py", tir_repro_text(program, red.script, red.outcome,
                                           trace=red.stats.get("schedule_trace")), mode=0o755)
    elif red.script:
        w.write("case.py", red.script)
        w.write("repro.py", repro_text(red.script, red.outcome, program, variants,
                                       input_seed=red.stats.get("input_seed") or 0,
                                       near_valid=bool(red.stats.get("near_valid")),
                                       inputs_by_name=red.stats.get("inputs_by_name"),
                                       module_json=red.repro.get("module_json", ""),
                                       schedule_traces=red.repro.get("schedule_traces")),
                mode=0o755)
    w.write("report.md", report_markdown(red, variants, affected))
    w.write("outcome.json", json.dumps(red.outcome, indent=1, default=str))
    from .api import stats_json

    w.write("reduce.json", stats_json(red))

