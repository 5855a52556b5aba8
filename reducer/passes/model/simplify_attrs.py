from __future__ import annotations

from fuzz.catalogue import CATALOGUE

from ..base import ModelPass

_GONE = object()


class SimplifyAttrs(ModelPass):
    """Attributes toward their plainest value: absent, 0 or 1, False, float32."""

    name = "simplify_attrs"
    measures = ("attrs",)
    strict, shapes = False, True

    def targets(self, prog):
        out = []
        for f in prog.functions:
            for n in f.nodes():
                if n.op not in CATALOGUE:
                    continue
                for k, v in sorted(n.attrs.items()):
                    for rank, x in enumerate(_simpler(v)):
                        out.append((f.name, n.name, k, rank, x))
        return out

    def edit(self, prog, chosen):
        pick: dict = {}
        for fname, node, k, rank, x in chosen:
            key = (fname, node, k)
            if key not in pick or rank < pick[key][0]:
                pick[key] = (rank, x)
        for (fname, node, k), (_, x) in pick.items():
            n = prog.func(fname).node(node)
            if x is _GONE:
                n.attrs.pop(k, None)
            else:
                n.attrs[k] = x
        return True


def _simpler(v) -> list:
    """Plainer values than ``v``, plainest first."""
    out: list = [_GONE] if v is not None else []
    if isinstance(v, bool):
        out += [False] if v else []
    elif isinstance(v, int):
        out += [x for x in (0, 1) if abs(x) < abs(v) or (v < 0 and x >= 0 and x != v)]
    elif isinstance(v, float):
        out += [0.0] if v != 0.0 else []
    elif isinstance(v, str) and v in ("float16", "float64", "bfloat16", "int8", "int32",
                                      "int64", "uint8", "bool"):
        out += ["float32"]
    elif v is not None and not isinstance(v, (list, dict, str)):
        out += [None]
    return out
