"""Which ops a failure names: ``unknown intrinsic Op(tirx.acosh)`` points at ``relax.acosh``.

The isolate passes try "that op alone" first: one oracle call instead of a ddmin search
when the hint is right, and none when the message names no op."""
from __future__ import annotations

import re
from typing import Optional

from fuzz.outcome import Outcome

_OP = re.compile(r'(?:Op\(|name=")(?:relax|tirx|tir|topi)\.([\w.]+)')
_RELAX = re.compile(r"\b(?:relax|R)\.((?:nn\.|image\.)?[a-z_][\w]*)\b")


def op_hints(outcome: Optional[Outcome]) -> list[str]:
    """Short op names ("acosh", "nn.conv2d") the failure's message mentions (none without an
    outcome: an --interesting reduction judges none)."""
    if outcome is None:
        return []
    text = " ".join((outcome.message, outcome.signature, outcome.detail))
    names = [m.group(1) for m in _OP.finditer(text)] + [m.group(1) for m in _RELAX.finditer(text)]
    out: list[str] = []
    for n in names:
        if n not in out and n not in ("transform", "analysis", "op", "attrs", "expr"):
            out.append(n)
    return out


def matches(op_name: str, hints: list[str]) -> bool:
    """``relax.acosh`` matches hint ``acosh``; ``relax.nn.conv2d`` matches ``conv2d`` too."""
    short = op_name.split("relax.", 1)[-1]
    return any(short == h or short.rsplit(".", 1)[-1] == h.rsplit(".", 1)[-1] for h in hints)
