"""What ``tvmfuzz reduce`` and ``tvmfuzz report`` do (tvmfuzz/cli.py holds their thin click
wrappers). Errors a user can act on become ``click.ClickException``: one line, exit 1."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Optional

import click

from .api import ReduceError, load_input, reduce_case, reduce_script, report_input


def _out(out: Optional[str], base: str, name: str) -> Path:
    return Path(out) if out else Path(base) / name


def _load(input_spec: str, corpus_dir: Optional[str]) -> tuple:
    """The input, or a one-line usage error (exit 2) before anything runs or is written."""
    try:
        return load_input(input_spec, corpus_dir and Path(corpus_dir))
    except ReduceError as e:
        raise click.UsageError(str(e))


def _check_entry(kind: str, value, entry: Optional[str]) -> None:
    if kind == "case" and entry and entry != value.entry:
        raise click.UsageError(f"--entry is for TVMScript files; the input is a case whose "
                               f"entry function is {value.entry}")


def run_reduce(input_spec: str, signature: Optional[str], interesting: Optional[str],
               jobs: int, out: Optional[str], timeout: float, time_budget: Optional[float],
               python: Optional[str], corpus_dir: Optional[str] = None,
               echo: Callable[[str], None] = click.echo, jail=None,
               entry: Optional[str] = None) -> int:
    if signature and interesting:
        raise click.UsageError("--signature and --interesting exclude each other")
    kind, value, name = _load(input_spec, corpus_dir)
    _check_entry(kind, value, entry)
    try:
        out_dir = _out(out, "reduced", name)
        common = dict(signature=signature, interesting=interesting, jobs=jobs, out_dir=out_dir,
                      timeout=timeout, python=python or sys.executable, log=echo,
                      time_budget=time_budget, jail=jail)
        echo(f"reducing {input_spec} ({kind}); replaying it first")
        red = (reduce_case(value, **common) if kind == "case"
               else reduce_script(value, entry=entry, **common))
    except ReduceError as e:
        raise click.ClickException(str(e))
    except OSError as e:
        raise click.ClickException(f"cannot write results: {e}")
    st = red.stats
    echo(f"signature: {red.signature}")
    unit = "statements" if getattr(red.reduced, "ir", "") == "tir" else "bindings"
    echo(f"reduced {st['bindings_before']} -> {st['bindings_after']} {unit} with "
         f"{st['oracle_calls']} oracle calls ({st['cache_hits']} cached, "
         f"{st['skipped_before_sandbox']} ill-formed candidates skipped) in {st['seconds']} s"
         + (" (stopped early)" if st.get("stopped_early") else ""))
    rep = red.outcome.reproduction or {}
    if rep:
        echo(f"the reduced {red.kind} reproduces {rep['reproduced']}/{rep['replays']} runs"
             + ("" if rep["reproduced"] == rep["replays"] else
                " -- WARNING: not every replay fails the same way; check the result"))
    if st.get("slippage"):
        echo(f"slippage: {st['slippage']} candidates failed with other signatures; "
             f"{len(red.slippage)} new findings saved under {red.out_dir / 'slippage'}")
    files = [f for f in ("case.json", "case.py", "repro.py", "report.md", "reduce.json")
             if (red.out_dir / f).exists()]
    echo(f"wrote {', '.join(files)} to {red.out_dir}")
    return 0


def run_report(input_spec: str, out: Optional[str], timeout: float, python: Optional[str],
               corpus_dir: Optional[str] = None, echo: Callable[[str], None] = click.echo,
               bisect: bool = True, jail=None, entry: Optional[str] = None) -> int:
    kind, value, name = _load(input_spec, corpus_dir)
    _check_entry(kind, value, entry)
    try:
        red = report_input(kind, value, out_dir=_out(out, "reports", name), timeout=timeout,
                           python=python or sys.executable, jail=jail, entry=entry)
    except ReduceError as e:
        raise click.ClickException(str(e))
    except OSError as e:
        raise click.ClickException(f"cannot write results: {e}")
    echo(f"signature: {red.signature}")
    # An ONNX case's repro.py builds the model itself: it needs no printed module.
    has_repro = bool(red.script) or (red.out_dir / "repro.py").exists()
    written = ["repro.py", "report.md"] if has_repro else ["report.md"]
    if bisect and _affected_versions(input_spec, red, kind, value, timeout, echo, jail, entry):
        written.append("bisect.json")
    echo(f"wrote {', '.join(written[:-1])} and {written[-1]} to {red.out_dir}"
         if len(written) > 1 else f"wrote {written[0]} to {red.out_dir}")
    if not has_repro:
        # e.g. a wrong inferred shape that the next op refuses: TVM cannot build the module.
        echo("the case could not be printed as TVMScript, so there is no repro.py; "
             "`tvmfuzz reduce` cuts it down to a module that prints")
    return 0


def _affected_versions(label: str, red, kind: str, value, timeout: float, echo,
                       jail=None, entry: Optional[str] = None) -> bool:
    """With other releases installed, replay the case on each (``tvmfuzz bisect``) for
    report.md's "Affected versions"; without, the section names the one release checked."""
    from worker import cases
    from worker.bisect import Subject, bisect, summary
    from worker.releases import installed

    from .report import update_affected

    if not installed():
        return False
    job = cases.job(value, entry=entry)
    echo("replaying it on each installed release (tvmfuzz bisect)")
    result = bisect(Subject(label, job, red.signature, red.out_dir, kind),
                    timeout=timeout, jail=jail)
    try:
        update_affected(red.out_dir, result)
    except OSError as e:
        raise click.ClickException(f"cannot write results: {e}")
    echo(f"affected versions: {summary(result)}")
    return True
