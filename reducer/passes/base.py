"""The base classes of delta passes, one per kind of case (the passes: registry.py).

A pass lists the elements it knows in a state, in a fixed order (``targets``), and edits a
copy for a chosen subset (``edit``); chunking, caching and parallelism are the generic
driver's (reducer/ddmin.py). ``measures`` names the components of the kind's size key (its
``MEASURES`` table) that the edits decrease: the driver accepts only candidates whose key is
smaller, so an edit no measure counts would never be accepted. The registry refuses a pass
naming a measure its kind does not have, and the driver counts candidates that are not
smaller as ``no_progress`` rather than dropping them silently.
"""
from __future__ import annotations

import json
from typing import Optional

from fuzz.model import Program

from fuzz.retype import IllFormed, check_uniform, retype
from .ir.helpers import KEEP_DECLARED, Refused, finish
from .model.context import ModelContext, reference_ok
from .tir.helpers import defined_ok


class DeltaPass:
    name = "pass"
    measures: tuple = ()   # names in the kind's MEASURES table that the edits decrease

    def targets(self, state) -> list:
        raise NotImplementedError

    def edit(self, state, chosen: list):
        raise NotImplementedError


class LocalPass(DeltaPass):
    """A pass run in the reducer's own process, under ddmin's protocol (count, describe,
    apply_many); the targets of the last state asked about are kept."""

    def __init__(self, ctx: Optional[ModelContext] = None):
        self.ctx = ctx
        self._memo: tuple = (None, None)

    def _targets(self, state) -> list:
        if self._memo[0] is not state:
            self._memo = (state, self.targets(state))
        return self._memo[1]

    def count(self, state) -> int:
        return len(self._targets(state))

    def describe(self, state, chunk: range):
        """The chunk's elements by name (stable across rounds, unlike indices)."""
        ts = self._targets(state)
        return tuple(json.dumps(ts[i], sort_keys=True, default=str) for i in chunk)

    def apply(self, state, chosen: frozenset):
        raise NotImplementedError

    def apply_many(self, state, chosen_sets) -> list:
        return [self.apply(state, c) for c in chosen_sets]


class ModelPass(LocalPass):
    """A pass on the Relax program model. ``strict``: the edit must not change any node's
    type (rewiring edits); ``shapes``: it edits shapes or dtypes, so the candidate also runs
    in the numpy reference."""

    strict = True
    shapes = False

    def __init__(self, ctx: ModelContext):
        super().__init__(ctx)

    def apply(self, prog: Program, chosen: frozenset) -> Optional[Program]:
        ts = self._targets(prog)
        cand = Program.loads(prog.dumps())   # deep: meta (variants) must not be shared
        try:
            if not self.edit(cand, [ts[i] for i in sorted(chosen)]):
                return None
            retype(cand, strict=self.strict, frozen=self.ctx.frozen)
            if self.shapes:
                check_uniform(cand, self.ctx.uniform)
                if self.ctx.check_reference and not reference_ok(cand):
                    return None
        except (IllFormed, KeyError, IndexError, ValueError, TypeError):
            return None
        return cand


class TirPass(LocalPass):
    """A pass on the TIR program model; a candidate using an undeclared buffer or variable
    is refused before the sandbox."""

    def apply(self, prog, chosen: frozenset):
        ts = self._targets(prog)
        cand = prog.copy()
        try:
            if not self.edit(cand, [ts[i] for i in sorted(chosen)]):
                return None
            if not defined_ok(cand):
                return None
        except (KeyError, IndexError, ValueError, TypeError):
            return None
        return cand


class IRPass(DeltaPass):
    """A pass on raw Relax IR, run in the sandbox child (reducer.jobs): ``edit`` returns the
    edited module (through ``self.finish``) or raises ``Refused``."""

    name = "ir"

    def __init__(self, check_well_formed: bool = True):
        self.check = check_well_formed

    def finish(self, mod, updates: dict, drop: set = frozenset()):
        return finish(mod, updates, drop, self.check)

    def apply(self, mod, chosen: set):
        ts = self.targets(mod)
        token = KEEP_DECLARED.set(not self.check)
        try:
            return self.edit(mod, [ts[i] for i in sorted(chosen) if i < len(ts)])
        except Refused:
            raise
        except Exception as e:  # noqa: BLE001 - TVM's inference refusing the edit
            raise Refused(f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        finally:
            KEEP_DECLARED.reset(token)
