"""IR-aware delta reduction of failing cases to minimal reproducers, and bug reports.

    tvmfuzz reduce INPUT [--signature SIG | --interesting CMD] [-j N] [--out DIR]
    tvmfuzz report INPUT [--out DIR]

INPUT is a stored case (program-model JSON), a TVMScript file, or a corpus bucket id.

Modules, in the order a reduction uses them:
  api            reduce_case / reduce_script / report_input: checks, driver, outputs
  oracle         is a candidate still the bug (signature or --interesting), cache, slippage
  pool           N crash-isolated sandboxes judging candidates in parallel
  ddmin          the one generic chunking driver every delta pass runs under
  model_passes   delta passes on the program model (nodes, functions, outputs, shapes...)
  retype         cheap well-formedness: the catalogue's shape rules re-type each candidate
  ir_passes      delta passes on raw Relax IR (sandbox child only; reducer.jobs runs them)
  script_passes  the parent's proxies for those passes
  tir            where TIR passes will plug in
  linedd         plain line-level ddmin (the benchmark baseline, and a fallback)
  script_judge   judging TVMScript under a case's compile variants
  size           binding counts and the measure candidates must decrease
  repro, repro_template, report, output   repro.py, report.md, atomic writes
"""
from .api import ReduceError, Reduction, load_input, reduce_case, reduce_script, report_input

__all__ = ["ReduceError", "Reduction", "load_input", "reduce_case", "reduce_script",
           "report_input"]
