"""Every delta pass, per kind of case, in the order the driver runs them: coarse to fine, the
whole list again until a round changes nothing (reducer/ddmin.py).

Adding a pass: a module under reducer/passes/<kind>/ (a subclass of the kind's base class in
base.py with ``name``, ``measures``, ``targets`` and ``edit``) and one line below. A pass whose
``measures`` are not entries of its kind's size table is refused here, at import.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Optional

from ..size import MEASURES as IR_MEASURES
from .model.size import MEASURES as MODEL_MEASURES
from .tir.size import MEASURES as TIR_MEASURES

MODEL = (                                   # Relax cases (fuzz.model); size: model/size.py
    "isolate_op.IsolateOp",                 # the op the failure names, alone in main
    "cleanup.Cleanup",                      # one candidate: the four changes that keep bugs
    "drop_variants.DropVariants",           # build fewer ways
    "drop_schedule_steps.DropScheduleSteps",  # fewer steps of a pinned schedule
    "shorten_passes.ShortenPasses",         # fewer passes in a recorded pass sequence
    "if_to_branch.IfToBranch",              # an R.If becomes the bindings of one branch
    "call_tir_to_const.CallTirToConst",     # an R.call_tir becomes a constant of its type
    "remove_functions.RemoveFunctions",     # callees go; their calls become parameters
    "shrink_outputs.ShrinkOutputs",         # fewer fields in a returned tuple
    "remove_dead.RemoveDead",               # nodes the result does not depend on
    "remove_nodes.RemoveNodes",             # nodes, users rewired or given a parameter
    "return_dead.ReturnDead",               # return a dead value instead
    "cleanup.Cleanup",                      # again, after the removals
    "remove_nodes.NodesToParams",           # nodes become parameters
    "inline_calls.InlineCalls",             # a call becomes the callee's nodes
    "drop_unused_params.DropUnusedParams",  # parameters nothing uses
    "simplify_blocks.SimplifyBlocks",       # one block, not dataflow
    "drop_annotations.DropAnnotations",     # near-valid promises undone
    "static_dims.StaticDims",               # symbolic dims static
    "shrink_dims.ShrinkDims",               # static dims to 1 or half
    "simplify_dtypes.SimplifyDtypes",       # float32 / int32
    "simplify_attrs.SimplifyAttrs",         # attributes toward plain values
    "simplify_variant.SimplifyVariant",     # plain build options
    "simplify_onnx.SimplifyOnnx",           # ONNX export/import flags off (ONNX cases)
    "simplify_torch.SimplifyTorch",         # PyTorch options to defaults (PyTorch cases)
)

TIR = (                                     # TIR cases (fuzz.tir.model); size: tir/size.py
    "drop_variants.DropVariants",           # extra variants, TIR passes of an order
    "drop_schedule_steps.DropScheduleSteps",
    "remove_stmts.RemoveStmts",             # whole statements
    "unwrap.Unwrap",                        # loops, ifs, lets, blocks become their bodies
    "drop_buffer_attrs.DropBufferAttrs",    # layout attributes to defaults
    "simplify_values.SimplifyValues",       # a stored value becomes an operand or constant
    "shrink_extents.ShrinkExtents",         # loops run once
    "drop_params.DropParams",               # parameters the body no longer uses
)

IR = (                                      # TVMScript as raw Relax IR; size: reducer/size.py
    "isolate_op.IsolateOp",                 # the op the failure names, alone in main
    "cleanup.Cleanup",                      # one candidate: the three changes that keep bugs
    "drop_functions.DropFunctions",         # functions other than main
    "shrink_outputs.ShrinkOutputs",         # fewer fields in main's returned tuple
    "remove_unused.RemoveUnused",           # bindings the result does not depend on
    "remove_bindings.RemoveBindings",       # bindings, users rewired or given a parameter
    "return_dead.ReturnDead",               # return a dead value instead
    "cleanup.Cleanup",                      # again, after the removals
    "remove_bindings.BindingsToParams",     # bindings become parameters
    "drop_unused_params.DropUnusedParams",  # parameters nothing uses
    "plain_blocks.PlainBlocks",             # no dataflow blocks
    "static_dims.StaticDims",               # symbolic dims static
    "shrink_dims.ShrinkDims",               # static dims to 1 or half
    "simplify_dtypes.SimplifyDtypes",       # float32 / int32
    "reset_attrs.ResetAttrs",               # operator attributes to their defaults
)


class PassError(Exception):
    """A pass that does not say how it counts toward its kind's size."""


@dataclass(frozen=True)
class Kind:
    name: str
    passes: tuple     # pass classes, in driver order
    measures: dict    # the size table: measure name -> function, in size-key order

    def size_key(self, state) -> tuple:
        return tuple(m(state) for m in self.measures.values())


def check(kind: str, classes, measures: dict) -> None:
    """Refuse a pass that declares no measure, one its kind's size table does not have, or
    the name of another pass."""
    seen: dict = {}
    for c in classes:
        where = f"{kind} pass {c.name!r} ({c.__module__}.{c.__qualname__})"
        if not c.measures:
            raise PassError(f"{where} declares no measures; name the entries of the size "
                            f"table its edits decrease, from: {', '.join(measures)}")
        unknown = [m for m in c.measures if m not in measures]
        if unknown:
            raise PassError(f"{where} declares {', '.join(map(repr, unknown))}, which the "
                            f"{kind} size key does not count (it has: {', '.join(measures)}); "
                            "an edit no measure counts would never be accepted")
        if seen.setdefault(c.name, c) is not c:
            raise PassError(f"{where}: the name is taken by {seen[c.name].__qualname__}")


def _load(kind: str, specs: tuple, measures: dict) -> Kind:
    classes = []
    for spec in specs:
        module, cls = spec.rsplit(".", 1)
        classes.append(getattr(importlib.import_module(f"{__package__}.{kind}.{module}"), cls))
    check(kind, classes, measures)
    return Kind(kind, tuple(classes), measures)


KINDS = {"model": _load("model", MODEL, MODEL_MEASURES),
         "tir": _load("tir", TIR, TIR_MEASURES),
         "ir": _load("ir", IR, IR_MEASURES)}


def passes(kind: str, *args) -> list:
    """The kind's passes, made with ``args`` (a ModelContext for "model"), in driver order."""
    return [cls(*args) for cls in KINDS[kind].passes]


def names(kind: str) -> list[str]:
    return [cls.name for cls in KINDS[kind].passes]


def by_name(kind: str, name: str):
    return {cls.name: cls for cls in KINDS[kind].passes}[name]


def decreased(kind: str, cand, state) -> Optional[str]:
    """The measure at which ``cand`` is smaller than ``state`` (the first that differs);
    None when it is not smaller."""
    k = KINDS[kind]
    for name, a, b in zip(k.measures, k.size_key(cand), k.size_key(state)):
        if a != b:
            return name if a < b else None
    return None
