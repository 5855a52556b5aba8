"""Which of TVM's own Python functions a case ran (its legalizers, topi computes, frontends,
printer and parser are Python): optional, in the sandbox child.

On when the sandbox runs with ``TVMFUZZ_PY_COVERAGE=1`` in its environment (``tvmfuzz run
--py-coverage`` sets it): ``worker.jobs`` judges each case under ``Tracer``, a ``sys.settrace``
function that only records the code object of each Python call (it returns None, so no line
events are traced) and keeps those under TVM's package directory. The answer carries them as
``outcome.extra["tvm_python"]`` (``relax/op/nn/nn.py:conv2d``); the campaign counts them as
coverage kind ``tvm_python`` (fuzz/coverage.py) and drops them from the outcome it keeps.
Function-level only: Python 3.11 has no ``sys.monitoring``, and line tracing costs far more
(``bench/py_coverage_cost.py`` measures this one).
"""
from __future__ import annotations

import os
import sys

ENV = "TVMFUZZ_PY_COVERAGE"


def enabled() -> bool:
    return os.environ.get(ENV) == "1"


class Tracer:
    def __init__(self):
        import tvm

        self.root = os.path.dirname(os.path.abspath(tvm.__file__)) + os.sep
        self.seen: set = set()
        self._add = self.seen.add

    def _trace(self, frame, event, arg):
        self._add(frame.f_code)   # every call: one set insertion; filtered in stop()

    def start(self) -> "Tracer":
        sys.settrace(self._trace)
        return self

    def stop(self) -> list:
        sys.settrace(None)
        n = len(self.root)
        return sorted({f"{c.co_filename[n:]}:{getattr(c, 'co_qualname', c.co_name)}"
                       for c in self.seen if c.co_filename.startswith(self.root)})
