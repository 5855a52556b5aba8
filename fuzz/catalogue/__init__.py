"""The op catalogue: one ``OpSpec`` per Relax op, one module per op family.

``CATALOGUE`` maps the Relax op name (``"relax.nn.conv2d"``) to its spec. To add an op, add a
spec to its family module's ``SPECS`` list; docs/ARCHITECTURE.md has a walk-through.
"""
from __future__ import annotations

from . import (creation, elementwise, grad, image, index, linalg, manipulate, nn, qdq, reduce,
               sort, vision)
from .spec import OpSpec, Value

FAMILIES = (elementwise, reduce, manipulate, index, nn, linalg, sort, creation, qdq, image, grad,
            vision)

CATALOGUE: dict[str, OpSpec] = {}
for _fam in FAMILIES:
    for _spec in _fam.SPECS:
        if _spec.name in CATALOGUE:
            raise RuntimeError(f"op {_spec.name} is catalogued twice")
        _spec.family = _spec.family or _fam.__name__.rsplit(".", 1)[-1]
        CATALOGUE[_spec.name] = _spec

__all__ = ["CATALOGUE", "FAMILIES", "OpSpec", "Value"]
