"""Hypothesis strategies over the program model.

``programs()`` runs the same generator as campaigns (fuzz.generate), with Hypothesis making
the choices, so property tests get shrinking for free: a failing program shrinks toward fewer
ops, smaller dims and earlier catalogue entries.
"""
from __future__ import annotations

from typing import Optional, Sequence

from hypothesis import strategies as st

from .choice import HypothesisChooser
from .generate import gen_program
from .generate import single_op_program


@st.composite
def programs(draw, mode: str = "valid", max_ops: int = 12,
             ops: Optional[Sequence[str]] = None):
    n_ops = draw(st.integers(1, max_ops))
    return gen_program(HypothesisChooser(draw_data(draw)), n_ops, mode, ops)


@st.composite
def one_op_programs(draw, op: str):
    """A program of one ``op`` (plus the tuple items it needs); None when it cannot sample."""
    return single_op_program(op, HypothesisChooser(draw_data(draw)))


def draw_data(draw):
    return draw(st.data())
