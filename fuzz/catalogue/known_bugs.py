"""TVM bugs the catalogue's self-check has met, by op and dtype.

The fuzzer still generates these ops and dtypes (hiding a bug by avoiding its op would blind the
campaign); only the catalogue's own self-test (tests/test_catalogue.py) accepts a failure that
matches an entry here. Each entry is a real TVM 0.27 defect seen by `python -m fuzz.selfcheck`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownBug:
    ops: tuple          # Relax op names
    dtypes: tuple       # input dtypes that trigger it ("*" = any)
    pattern: str        # regex over "ErrorType: first message line"
    note: str


KNOWN_TVM_BUGS: list[KnownBug] = [
    KnownBug(("relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
              "relax.atan2", "relax.cosh", "relax.sinh"), ("float16",),
             r"unknown intrinsic .*tirx\.", "LLVM codegen has no float16 lowering for these "
             "inverse/hyperbolic intrinsics (float32 and float64 build)"),
    KnownBug(("relax.isfinite", "relax.isinf", "relax.isnan"), ("bfloat16",),
             r"Data type T\.bfloat16 not supported for (finiteness|isnan)",
             "finiteness checks reject bfloat16 during lowering"),
    KnownBug(("relax.power", "relax.log_add_exp"), ("bfloat16",),
             r"IsFloatType", "TIR's IsFloatType check does not count bfloat16 as a float"),
]


def match(op: str, dtypes, message: str):
    for bug in KNOWN_TVM_BUGS:
        if op in bug.ops and ("*" in bug.dtypes or set(dtypes) & set(bug.dtypes)) \
                and re.search(bug.pattern, message):
            return bug
    return None
