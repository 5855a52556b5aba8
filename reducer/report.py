"""report.md (ready to paste into a TVM GitHub issue) and the other result files of a
reduction: case.json, case.py, repro.py, reduce.json. All writes are atomic and keep what was
there before (``reducer.output``)."""
from __future__ import annotations

import json
import platform
from typing import Optional

from fuzz.outcome import Outcome

from .output import PARTIAL
from .repro import failing_variants, repro_text, versions


def message_line(outcome: Outcome, width: int = 160) -> str:
    """The failure's own message as a title shows it: its first line, trimmed, ``Op(...)``
    reprs shortened to the op's name; never the normalized form of a signature."""
    from fuzz.signature import _reduce_op_reprs

    msg = outcome.message.strip()
    line = _reduce_op_reprs(msg.splitlines()[0] if msg else "").strip().rstrip(":").strip()
    return line if len(line) <= width else line[:width - 1].rstrip() + "…"


def failing_step(outcome: Outcome) -> Optional[dict]:
    """The schedule step a failure in tvmfuzz's own schedule step happened in (the last one
    recorded: the steps stop at the one that raised)."""
    extra = outcome.extra
    if extra.get("failing_step"):
        return extra["failing_step"]
    steps = extra.get("schedule") or []
    if extra.get("failing_pass", "").startswith("tvmfuzz.") and steps:
        return steps[-1]   # outcomes recorded before failing_step was
    return None


def _where(outcome: Outcome) -> str:
    """Where a build failed, for a title: the TVM pass, the schedule primitive tvmfuzz was
    applying (tvmfuzz's own steps are never presented as TVM passes), code generation."""
    extra = outcome.extra
    fpass = extra.get("failing_pass", "")
    if fpass.startswith("tvmfuzz.") or extra.get("failing_step"):
        step = failing_step(outcome)
        return (f" in s_tir schedule primitive {step.get('prim')}" if step
                else " while applying an s_tir schedule")
    if fpass:
        return f" in {fpass}"
    if extra.get("phase") == "codegen":
        return " in code generation"
    stage = outcome.stage
    return f" at {stage}" if stage else ""


def _death_where(outcome: Outcome) -> str:
    """Where a death by signal, a hang or a runaway allocation happened, for a title: the
    schedule primitive, the pass, the kernel the VM was running, TVM's innermost frame."""
    extra = outcome.extra
    stage = outcome.stage
    step = failing_step(outcome)
    if step:
        return f" in s_tir schedule primitive {step.get('prim')}"
    if extra.get("failing_pass"):
        return f" in {extra['failing_pass']}"
    if stage == "run" and extra.get("kernel"):
        return f" running kernel {extra['kernel']}"
    frames = extra.get("native_frames") or []
    where = {"build": "building", "run": "running", "materialize": "constructing",
             "vm_load": "loading", "parse": "parsing", "verify": "verifying"}.get(stage, "")
    return (f" {where}" if where else "") + (f" in {frames[0]}" if frames else "")


def title(outcome: Outcome, ir: str = "relax", status: str = "new") -> str:
    """The report's title: ``[Bug][TIR]`` or ``[Bug][Relax]`` (the case's IR) for a new bug;
    a known bug or an expected refusal says so instead of "[Bug]"."""
    kind, stage = outcome.kind, outcome.stage
    msg = message_line(outcome)
    etype = outcome.error_type
    fpass = outcome.extra.get("failing_pass", "")
    where = _where(outcome)
    site = outcome.throw_site
    site = f" ({site.rsplit('/', 1)[-1]})" if site else ""
    if kind == "ill_formed":
        text = "well_formed rejects a module built through the Relax BlockBuilder"
    elif kind == "verifier_build" and stage == "well_formed":
        text = "A module well_formed rejects still builds and runs"
    elif kind == "verifier_build":
        text = f"well_formed accepts a module that fails to build{where}: {msg}"
    elif kind == "pass_ill_formed":
        text = f"{fpass or 'A pass'} produces ill-formed Relax IR"
    elif kind == "gpu_host_code":
        text = f"A GPU build leaves a PrimFunc on the host: {msg}"
    elif kind == "memory_plan_overlap":
        text = f"Static memory planning overlaps live tensors: {msg}"
    elif kind == "numeric":
        key = outcome.extra.get("numeric_key", "")
        text = f"Wrong result{' of ' + key if key else ''} on {outcome.target}"
    elif kind == "roundtrip":
        text = f"TVMScript print/parse round trip: {msg}"
    elif kind == "shape_inference":
        text = f"Shape inference: {msg}"
    elif kind == "late_validation":
        text = (f"A malformed buffer is accepted at construction and rejected only{where}: "
                f"{msg}{site}")
    elif kind in ("signal", "hang", "oom"):
        what = {"signal": f"Crash ({outcome.error_type or 'signal'})",
                "hang": "Hang", "oom": "Runaway memory use"}[kind]
        unit = "a PrimFunc" if ir == "tir" else "a Relax module"
        text = f"{what}{_death_where(outcome) or ' compiling or running ' + unit}"
    else:
        text = f"{etype + ' ' if etype else ''}{where.strip() or 'failure'}: {msg}{site}"
    tag = {"known": "[Known bug]", "expected": "[Expected, not a bug]"}.get(status, "[Bug]")
    area = {"tir": "TIR", "onnx": "Relax][Frontend][ONNX",
            "torch": "Relax][Frontend][PyTorch"}.get(ir, "Relax")
    if ir == "onnx" and kind == "shape_inference":
        text = f"ONNX import declares the wrong output type: {msg}"
    if ir == "torch" and kind == "shape_inference":
        text = f"from_exported_program declares the wrong output type: {msg}"
    return f"{tag}[{area}] {text}"


def _expected_text(outcome: Outcome, ir: str = "relax") -> str:
    kind = outcome.kind
    if ir == "onnx" and outcome.stage == "import":
        return ("onnxruntime accepts and runs the ONNX model below, so "
                "`tvm.relax.frontend.onnx.from_onnx` imports it into a module whose declared "
                "output types are the ones onnxruntime computes.")
    if ir == "onnx" and kind == "numeric":
        return "The outputs agree with onnxruntime's (within the usual floating-point tolerance)."
    if ir == "torch" and outcome.stage == "import":
        return ("Eager PyTorch runs the module below and `torch.export` exports it, so "
                "`tvm.relax.frontend.torch.from_exported_program` imports it into a module "
                "whose declared output types are the ones eager PyTorch computes.")
    if ir == "torch" and kind == "numeric":
        return ("The outputs agree with eager PyTorch's (within the usual floating-point "
                "tolerance).")
    if ir == "tir" and kind not in ("numeric", "roundtrip", "late_validation"):
        return ("The PrimFunc is well-formed (`tvm.tirx.analysis.verify_well_formed` accepts "
                "it), so it schedules, builds and runs, or TVM reports a user-facing error "
                "instead of an internal one.")
    if kind == "numeric":
        return "The outputs agree with numpy's (within the usual floating-point tolerance)."
    if kind == "verifier_build" and outcome.stage == "well_formed":
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
    if kind == "memory_plan_overlap":
        return ("StaticPlanBlockMemory places a tensor in a storage only where no tensor still "
                "read later uses it: a tensor read later, itself or through a view of it "
                "(`vm.builtin.reshape`, `match_cast`, `reshape`), keeps its storage until that "
                "read, so the kernel writing the new tensor cannot overwrite what is read.")
    if kind == "gpu_host_code":
        return ("Every PrimFunc built for a GPU target that reads device buffers binds GPU "
                "threads (or the build refuses it), so no host code reads device memory.")
    if kind == "late_validation":
        return ("The malformed buffer declaration is refused where it is made (parsing, "
                "`T.match_buffer`/`T.decl_buffer`) or by the well-formedness check, with a message "
                "naming the buffer; not by an internal check in a later pass.")
    return ("The module is well-formed (`relax.analysis.well_formed` accepts it), so it builds "
            "and runs, or the build reports a user-facing error instead of an internal one.")


_PIPELINES = {
    "default": "relax.build's default",
    "target": "the target's default (`relax.get_default_pipeline`)",
    "zero": "`relax.get_pipeline(\"zero\")`, then the default build pipeline",
    "passes": "the pass list, then the default build pipeline",
    "scheduled": "LegalizeOps, then the s_tir schedule tvmfuzz applied (below), then the "
                 "default build pipeline",
    "tir": "`tvm.tirx.build`",
}


def _variant_text(v: dict) -> str:
    pipeline = v.get("pipeline", "default")
    text = (f"target `{json.dumps(v.get('target', {}))}`, pipeline `{pipeline}` "
            f"({_PIPELINES.get(pipeline, pipeline)})")
    if v.get("passes"):
        text += ", passes " + ", ".join(f"`{p}`" for p in v["passes"])
    if v.get("extra_passes"):
        text += ", extra passes first: " + ", ".join(f"`{p}`" for p in v["extra_passes"])
    return text + f", exec mode `{v.get('exec_mode', 'bytecode')}`"


def _variant_lines(variants: list) -> list[str]:
    """The builds, as Environment lines (none when there is no build to name)."""
    if not variants:
        return []
    if len(variants) == 1:
        return [f"- Build: {_variant_text(variants[0])}"]
    return ["- Builds, in this order (the last one fails):"] + [
        f"  {i}. {_variant_text(v)}" for i, v in enumerate(variants, 1)]


def _schedule_lines(o: Outcome, variants: list, traces: Optional[dict]) -> list[str]:
    """For a Relax "scheduled" build: the schedule tvmfuzz applied (tvmfuzz's own step, not a
    TVM pass), as TVM's trace."""
    idx = [i for i, v in enumerate(variants) if v.get("pipeline") == "scheduled"]
    if not idx:
        return []
    steps = o.extra.get("schedule") or []
    step = failing_step(o)
    got = (traces or {}).get(str(idx[-1])) or {}
    if not steps and got.get("traces") is not None:   # a death after the schedule records
        steps = [{"prim": t.get("prim", "?")} for t in got["traces"]]   # none: the trace's
    if not steps and got.get("traces") == []:
        return ["### The schedule tvmfuzz applied", "",
                "None: tvmfuzz's schedule step (between `LegalizeOps` and the default build "
                "pipeline) applied no primitive to this module, so the build is `LegalizeOps` "
                "followed by the default pipeline, which repro.py runs as it is.", ""]
    out = ["### The schedule tvmfuzz applied", "",
           "tvmfuzz applied this s_tir schedule to the PrimFuncs `LegalizeOps` made, between "
           "`LegalizeOps` and the default build pipeline (its own step, named "
           "`tvmfuzz.RandomSchedule` where a pass would be named; not a TVM pass): "
           f"{len(steps)} primitive(s), " + ", ".join(f"`{s.get('prim')}`" for s in steps)
           + "." + (f" TVM fails in the last one, `{step.get('prim')}`." if step else ""), ""]
    if got.get("traces"):
        out += ["As TVM's own trace, each step on a fresh `tvm.s_tir.Schedule` of its "
                "function (this is what repro.py replays):", "", "```python"]
        for n, t in enumerate(got["traces"], 1):
            fails = " -- TVM fails here" if t.get("crashes") else ""
            out += [f"# step {n}: {t['func']}{fails}", *t["trace"]]
        out += ["```", ""]
    elif got.get("error"):
        out += [f"It could not be written as TVM's trace ({got['error']}), so repro.py "
                "cannot replay it.", ""]
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


def _actual_where(o: Outcome) -> str:
    """Where the failure happened, for "Actual behavior"."""
    extra = o.extra
    fpass = extra.get("failing_pass", "")
    if fpass.startswith("tvmfuzz."):
        step = failing_step(o)
        return (f", while tvmfuzz applied the s_tir schedule primitive `{step.get('prim')}` "
                "(the last step of the schedule below)" if step else
                ", while tvmfuzz applied the s_tir schedule below")
    if fpass:
        return f", failing pass `{fpass}`"
    if extra.get("phase") == "codegen":
        return ", after the last pass finished (in code generation)"
    return ""


def _repro_text(o: Outcome, meta: dict, module_json: bool, builder: bool = False) -> str:
    kind, stage = o.kind, o.stage
    if builder:
        return ("TVM fails while this module is being constructed, so there is no module to "
                "print as TVMScript. `repro.py` (attached) constructs it with "
                "`relax.BlockBuilder` call by call, as tvmfuzz did (the code below), and reports "
                "the failure.")
    source = ("loads the module from TVM's JSON of it (`tvm.ir.load_json`: TVM's printer does "
              "not give this module back exactly, which the module below is the printout of)"
              if module_json else "parses the module below")
    if kind == "shape_inference":
        text = (f"`repro.py` (attached) {source} and compares the type TVM infers for the op's "
                "result with the one numpy's semantics give.")
    elif kind == "roundtrip":
        text = (f"`repro.py` (attached) {source}, builds and runs it as listed above, then "
                "prints it with `show_meta=True` and parses the text back.")
    elif kind in ("memory_plan_overlap", "gpu_host_code"):
        seen = ("the module StaticPlanBlockMemory returns: which tensor it placed in which "
                "storage, and what is still read after" if kind == "memory_plan_overlap" else
                "the module SplitHostDevice receives: which PrimFunc for the GPU target binds "
                "no GPU thread")
        text = (f"`repro.py` (attached) {source} and builds it as listed above, with a pass "
                f"instrument that reads {seen}. The build itself succeeds, so no inputs are "
                "needed (and no GPU: what is wrong is in the built module).")
    elif stage == "build":
        text = (f"`repro.py` (attached) {source} and builds it as listed above; the build "
                "fails, so no inputs are needed.")
    else:
        text = (f"`repro.py` (attached) {source}, builds it as listed above, runs it on "
                "deterministic inputs (embedded) and reports the failure.")
    if meta.get("mode") == "near-valid":
        # Whether well_formed accepts it is said above; this is only how repro.py reads it.
        how = ("TVMScript's parser refuses such text, so repro.py loads TVM's JSON of it"
               if module_json else
               "so it is parsed with `tvm.script.from_source(text, check_well_formed=False)`")
        text += (" The module was changed on purpose from a valid one (a near-valid mutant: "
                 f"{', '.join(dict.fromkeys(meta.get('mutations') or [])) or 'its types'}); {how}.")
    return text


def report_markdown(red, variants: list, affected: Optional[dict] = None) -> str:
    o = red.outcome
    v = versions(red.stats.get("python"))
    program = red.reduced if red.kind == "case" else None
    meta = (program.meta if program is not None else {}) or {}
    detail = (o.detail or o.message).strip()
    detail = "\n".join(detail.splitlines()[-40:])
    site = o.throw_site
    rep = o.reproduction or {}
    st = red.stats
    message = f"{o.error_type + ': ' if o.error_type else ''}{o.message}"
    ir = program.ir if program is not None else "relax"
    status, why = "new", ""
    if program is not None:
        from fuzz.triage import auto_status

        status, why = auto_status(program, o)
    lines = [f"# {title(o, ir, status)}", ""]
    if status != "new":
        lines += [f"**Status: {status}.** {why}", ""]
    lines += ["### Expected behavior", "", _expected_text(o, ir), "",
             "### Actual behavior", "",
             f"Stage `{o.stage}`{_actual_where(o)}"
             + (f", thrown at `{site}`" if site else "") + ":", "",
             "```", message.strip() or "(no message)", "```", ""]
    if detail and detail != o.message.strip():
        lines += ["<details><summary>Full error</summary>", "", "```", detail, "```",
                  "</details>", ""]
    found = [text.format(meta[key]) for text, key in (("generator v{}", "generator"),
                                                       ("seed {}", "seed"), ("mode {}", "mode"))
             if meta.get(key) is not None]
    if meta.get("mutations"):
        found.append(f"mutations {', '.join(meta['mutations'])}")
    onnx_lines: list = []
    if ir == "onnx":
        onnx_lines = _onnx_lines(program)
    elif ir == "torch":
        onnx_lines = _torch_lines(program)
    lines += [
        "### Environment",
        "",
        f"- TVM: apache-tvm {v['apache-tvm'] or '(unknown)'} (PyPI), apache-tvm-ffi "
        f"{v['apache-tvm-ffi'] or '(unknown)'}",
        f"- Python {platform.python_version()}, numpy {v['numpy']}, "
        f"{platform.system()} {platform.machine()}",
        *_variant_lines(variants),
        "",
        *affected_section(affected, v["apache-tvm"]),
        "### Steps to reproduce",
        "",
        "```bash",
        (f"pip install apache-tvm=={v['apache-tvm']} numpy" if v["apache-tvm"] else
         "pip install apache-tvm numpy") + (" onnx onnxruntime" if ir == "onnx" else
                                            " torch" if ir == "torch" else ""),
        "python repro.py   # exit 1: reproduces; 0: fixed; 2: fails differently",
        "```",
        "",
        _repro_text(o, meta, bool(red.repro.get("module_json")),
                    builder=not red.script and bool(red.repro.get("builder")))
        if ir not in ("onnx", "torch") else
        ("`repro.py` (attached) builds the ONNX model below with `onnx.helper`, runs it in "
         "onnxruntime on the embedded inputs (the reference), imports it with `from_onnx` "
         "(options above), then builds and runs the imported module as listed above.")
        if ir == "onnx" else
        ("`repro.py` (attached) defines the `torch.nn.Module` below, runs it in eager PyTorch "
         "on the embedded inputs (the reference), exports it with `torch.export`, imports it "
         "with `from_exported_program` (options below), then builds and runs the imported "
         "module as listed above."),
        "",
        *onnx_lines,
        "### Imported module" if ir in ("onnx", "torch") else "### Reduced module",
        "",
        "```python",
        red.script.strip() if red.script else (red.repro.get("builder") or "").strip()
        or ("(none: the import fails)" if ir in ("onnx", "torch") and o.stage == "import"
            else "(could not be printed)"),
        "```",
        "",
        *_schedule_lines(o, variants if program is None or program.ir != "tir" else [],
                         red.repro.get("schedule_traces")),
        *_tir_lines(program, o, st),
        "### How it was found",
        "",
        "Found by tvmfuzz" + (f" ({', '.join(found)})" if found else
                              " from a user's TVMScript file" if program is None else "") + ".",
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


def _onnx_lines(program) -> list[str]:
    """An ONNX case's model (as onnx.helper calls) and its export and import options."""
    from fuzz.inputs import make_inputs
    from fuzz.onnx_export import OnnxOptions, export, model_source

    opts = OnnxOptions.from_json(program.meta.get("onnx") or {})
    try:
        _, arrays = make_inputs(program, program.meta.get("seed") or 0)
        source = model_source(export(program, opts, arrays)).strip()
    except Exception as e:  # noqa: BLE001 - the report is still worth writing
        source = f"# the model could not be written: {type(e).__name__}: {e}"
    return ["### ONNX model", "",
            f"Opset {opts.opset}; import: `from_onnx(model, keep_params_in_input="
            f"{bool(opts.keep_params_in_input)}, shape_dict="
            f"{'the inputs’ shapes' if opts.shape_dict else 'None'})`.", "",
            "```python", source, "```", ""]


def _torch_lines(program) -> list[str]:
    """A PyTorch case's nn.Module (its source) and its export and import options."""
    from fuzz.inputs import make_inputs
    from fuzz.torch_export import TorchOptions, full_source

    opts = TorchOptions.from_json(program.meta.get("torch") or {})
    try:
        _, arrays = make_inputs(program, program.meta.get("seed") or 0)
        source = full_source(program, opts, arrays).strip()
    except Exception as e:  # noqa: BLE001 - the report is still worth writing
        source = f"# the module could not be written: {type(e).__name__}: {e}"
    flags = ", ".join(f"{k}={bool(getattr(opts, k))}" for k in (
        "keep_params_as_input", "unwrap_unit_return_tuple", "no_bind_return_tuple",
        "run_ep_decomposition"))
    return ["### PyTorch module", "",
            f"`torch.export.export(Model(), inputs, dynamic_shapes=DYNAMIC as Dim.AUTO)`"
            f"{'.run_decompositions()' if opts.decompose else ''}; import: "
            f"`from_exported_program(ep, {flags})`.", "",
            "```python", source, "```", ""]


def _tir_lines(program, o: Outcome, st: dict) -> list[str]:
    """For a TIR case: why a malformed buffer matters, and the schedule that was applied."""
    if program is None or program.ir != "tir":
        return []
    meta, out = program.meta, []
    if o.kind == "late_validation":
        fpass = o.extra.get("failing_pass") or "a later pass"
        out += [f"The PrimFunc is malformed on purpose ({meta.get('invalid')}). TVM accepted it "
                "when parsing it and in its well-formedness check, and rejected it only in "
                f"`{fpass}`: validation happens too late (the error should come from the "
                "buffer's construction or the verifier, with a message that names the buffer).",
                ""]
    steps = (meta.get("schedule") or {}).get("applied") or []
    if steps:
        trace = st.get("schedule_trace") or ""
        out += [f"tvmfuzz applied this schedule before the build: {len(steps)} s_tir "
                "primitive(s), " + ", ".join(f"`{s.get('prim')}`" for s in steps) + ".", ""]
        if trace:
            out += ["```python", "sch = tvm.s_tir.Schedule(mod)", trace, "```", ""]
    passes = [p for v in meta.get("variants") or [] for p in v.get("passes") or []]
    if passes:
        out += ["TIR pass order tvmfuzz applied (its random order, then the passes of the "
                "default pipeline after the furthest one the order reached, through "
                "MakePackedAPI); the build then only finalizes and generates code: "
                + ", ".join(f"`{p}`" for p in passes) + ".", ""]
    return out


def write_outputs(red, variants: Optional[list] = None, affected: Optional[dict] = None) -> None:
    from .output import OutDir

    w = red.writer or OutDir(red.out_dir)
    program = red.reduced if red.kind == "case" else None
    variants = variants or (red.stats.get("variants") if red.kind == "script" else None) \
        or failing_variants(program, red.outcome)
    if program is not None:
        w.write("case.json", program.dumps())
    if program is not None and program.ir in ("onnx", "torch"):
        from .repro import onnx_repro_text, torch_repro_text

        if red.script:
            w.write("case.py", red.script)   # the module TVM imported
        make = onnx_repro_text if program.ir == "onnx" else torch_repro_text
        w.write("repro.py", make(program, red.outcome, variants,
                                 red.repro.get("schedule_traces")), mode=0o755)
    elif red.script and program is not None and program.ir == "tir":
        from .tir_repro import tir_repro_text

        w.write("case.py", red.script)
        w.write("repro.py", tir_repro_text(program, red.script, red.outcome,
                                           trace=red.stats.get("schedule_trace")), mode=0o755)
    elif red.script or red.repro.get("builder"):
        if red.script:
            w.write("case.py", red.script)
        w.write("repro.py", repro_text(red.script or red.repro["builder"], red.outcome,
                                       program, variants, builder=not red.script,
                                       input_seed=red.stats.get("input_seed") or 0,
                                       near_valid=bool(red.stats.get("near_valid")),
                                       inputs_by_name=red.stats.get("inputs_by_name"),
                                       entry=red.stats.get("entry"),
                                       module_json=red.repro.get("module_json", ""),
                                       schedule_traces=red.repro.get("schedule_traces")),
                mode=0o755)
    w.write("report.md", report_markdown(red, variants, affected))
    w.write("outcome.json", json.dumps(red.outcome.to_json(), indent=1, default=str))
    w.write("reduce.json", red.stats_json())
    for name in ("case.json", "case.py"):   # the best so far, now written in full above
        (w.path / (PARTIAL + name)).unlink(missing_ok=True)

