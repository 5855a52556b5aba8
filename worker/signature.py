"""Crash signatures: one stable name per bug.

A signature is stage + kind + exception class + the first message line, normalized so that
numbers, hex addresses, shapes and generated value names do not split one bug into many, + the
C++ throw site (``file:line`` under TVM's ``src/``) + the failing pass where known. ``Op(...)``
is reduced to the op's name, which stays: a different op is a different bug.
"""
from __future__ import annotations

import hashlib
import re

_DTYPE = r"(?:bfloat16|float(?:8|16|32|64)|u?int(?:1|4|8|16|32|64)|bool|e[45]m[23]\w*)"
_OP_START = re.compile(r'(?:ir\.)?Op\((?=span=|name=)')
_OP_SHORT = re.compile(r"\bOp\(([\w.]+)\)")
_QUALIFIED = re.compile(r"\b(?:relax|tirx|tir|topi|s_tir|T|R|I)\.[\w.]+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUM = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_NAME_NUM = re.compile(r"\b([A-Za-z_]+?)_?\d+\b")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_SPACES = re.compile(r"\s+")
# Access paths name the function on 0.27 and not on 0.26: one bug, one signature on both.
_ROOT_FUNC = re.compile(r'<root>\.functions\[I\.GlobalVar\("[^"]*"\)\]')
# Argument lists whose length follows the tensor's rank: one bug, whatever the rank.
_REPEATS = re.compile(r"\b(ax#|i#|j#|k#)(?:, \1)*")   # loop variables of a tensor access
_TENSOR_LOAD = re.compile(r"tensor_load\((?:[^()]|\([^()]*\))*\)")
# Messages that name the op only on a later line (CodeGenVM: "Offending call: R.exp(p1)").
_OFFENDING = re.compile(r"Offending call:\s*R\.([\w.]+)\(")


def normalize_message(msg: str) -> str:
    line = (msg or "").strip().splitlines()[0] if (msg or "").strip() else ""
    line = _reduce_op_reprs(line)
    line = _ROOT_FUNC.sub("<root>", line)
    line = _TENSOR_LOAD.sub("tensor_load(...)", line)
    keep: list[str] = []

    def protect(m):   # a private-use character stands in, so no digit of it is rewritten
        keep.append(m.group(0))
        return chr(0xE000 + len(keep) - 1)

    line = _OP_SHORT.sub(protect, line)
    line = _QUALIFIED.sub(protect, line)
    line = re.sub(rf"\b{_DTYPE}\b", protect, line)
    line = _HEX.sub("0x?", line)
    line = _NUM.sub("N", line)
    line = _NAME_NUM.sub(lambda m: f"{m.group(1)}#", line)   # v12, lv3, p_4 -> v#, lv#, p#
    line = _REPEATS.sub(lambda m: f"{m.group(1)}...", line)
    line = re.sub("[\ue000-\uf8ff]", lambda m: keep[ord(m.group(0)) - 0xE000], line)
    return _SPACES.sub(" ", line).strip()[:300]


def _reduce_op_reprs(line: str) -> str:
    """``ir.Op(span=None, ..., name="relax.divide", ...)`` -> ``Op(relax.divide)``, also when
    the first line ends inside the repr."""
    while (m := _OP_START.search(line)):
        depth, i = 1, m.end()
        while i < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            i += 1
        name = re.search(r'name="([^"]+)"', line[m.end():i])
        line = line[:m.start()] + f"Op({name.group(1) if name else '?'})" + line[i:]
    return line


def signature(outcome: dict) -> str:
    """The readable signature of a failing outcome (``Outcome.to_json()`` form)."""
    if outcome.get("verdict") == "pass":
        return ""
    kind = outcome.get("kind", "")
    parts = [kind, outcome.get("stage", ""), outcome.get("error_type", "")]
    if kind == "numeric":
        # No throw site: name what differed (the op and dtype of the output), not the values.
        parts.append(outcome.get("extra", {}).get("numeric_key", ""))
    else:
        parts.append(normalize_message(outcome.get("message", "")))
        offending = _OFFENDING.search(outcome.get("detail", "") or "")
        if offending:
            parts.append(f"Op(relax.{offending.group(1)})")
    site = outcome.get("throw_site", "")
    failing_pass = outcome.get("extra", {}).get("failing_pass", "")
    return " | ".join(p for p in parts if p) + (f" @ {site}" if site else "") + (
        f" [pass {failing_pass}]" if failing_pass else "")


def short(sig: str, width: int = 160) -> str:
    """A signature cut to ``width`` for one-line display, keeping its end (the op, the throw
    site and the pass tell bugs apart; a long message's middle does not)."""
    return sig if len(sig) <= width else sig[:width - 64] + " ... " + sig[-59:]


def signature_id(sig: str) -> str:
    return hashlib.sha1(sig.encode()).hexdigest()[:12]
