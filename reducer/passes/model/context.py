"""What the model passes know about the original case, and the numpy-reference check."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from fuzz.model import Program
from fuzz.outcome import Outcome

from ...hints import op_hints
from fuzz.retype import frozen_nodes, uniform_dtypes


@dataclass
class ModelContext:
    """What the passes need to know about the original case."""

    frozen: dict = field(default_factory=dict)     # nodes typed by hand (near-valid mutants)
    failing_variant: Optional[dict] = None         # the variant the finding failed under
    kind: str = ""                                 # the finding's kind (crash, verifier_build...)
    hints: list = field(default_factory=list)      # op names the failure's message mentions
    uniform: dict = field(default_factory=dict)    # nodes whose inputs share one dtype
    env: dict = field(default_factory=dict)        # symbolic dim values the case ran with
    check_reference: bool = False                  # the original runs in the numpy reference

    @staticmethod
    def of(prog: Program, outcome: Optional[Outcome] = None) -> "ModelContext":
        """``outcome``: the original's (None under --interesting: nothing was judged)."""
        from fuzz import reference
        from fuzz.inputs import make_inputs

        env: dict = {}
        ok = False
        try:
            env, args = make_inputs(prog, prog.meta.get("seed") or 0)
            if prog.meta.get("mode") != "near-valid":
                reference.run(prog, args, env)
                ok = True
        except Exception:  # noqa: BLE001 - then the reference is no filter for this case
            pass
        return ModelContext(frozen_nodes(prog),
                            outcome.extra.get("variant") if outcome is not None else None,
                            outcome.kind if outcome is not None else "", op_hints(outcome),
                            uniform_dtypes(prog), env, ok)


def reference_ok(prog: Program) -> bool:
    """The candidate still runs in the numpy reference with every shape rule holding."""
    from fuzz import reference
    from fuzz.inputs import make_inputs

    try:
        env, args = make_inputs(prog, prog.meta.get("seed") or 0)
        reference.run(prog, args, env)
        return True
    except Exception:  # noqa: BLE001
        return False
