"""IR-aware delta reduction of failing cases to minimal reproducers, and bug reports.

    tvmfuzz reduce INPUT [--signature SIG | --interesting CMD] [-j N] [--out DIR]
    tvmfuzz report INPUT [--out DIR]

INPUT is a stored case (program-model JSON), a TVMScript file, or a corpus bucket id.

Modules, in the order a reduction uses them:
  api            reduce_case / reduce_script / report_input: checks, driver, outputs
  oracle         is a candidate still the bug (signature or --interesting), cache, slippage
  pool           N crash-isolated sandboxes judging candidates in parallel
  ddmin          the one generic chunking driver every delta pass runs under
  passes         the delta passes, one module each (passes/model, passes/tir, passes/ir)
                 and passes/registry.py, which lists them per kind in driver order
  retype         cheap well-formedness: the catalogue's shape rules re-type each candidate
  jobs           the sandbox child's side of the IR passes (raw Relax IR from TVMScript)
  script_passes  the parent's proxies for those passes
  linedd         plain line-level ddmin (the benchmark baseline, and a fallback)
  size           TVMScript sizes: binding counts, and the measures IR candidates decrease
  repro, repro_template, report, output   repro.py, report.md, atomic writes
"""
from .api import ReduceError, Reduction, load_input, reduce_case, reduce_script, report_input

__all__ = ["ReduceError", "Reduction", "load_input", "reduce_case", "reduce_script",
           "report_input"]
