"""The extension point for TIR reduction (tvmfuzz does not generate TIR yet).

A TIR pass is an ``ir_passes.IRPass``: ``targets(mod)`` lists elements of the module's
PrimFuncs in a fixed order, ``edit(mod, chosen)`` returns the edited module (or raises
``ir_passes.Refused``), and ``self.finish(mod, {gvar: new_func})`` verifies it. It runs in the
sandbox child like the Relax passes, so the parent, the driver and the oracle need no change:
add the class to ``ir_passes.PASSES`` and it is counted, chunked and judged.

Passes worth writing, after bug class 4 of the project's bug-classes notes (late validation of
buffer ``axis_separators``): remove statements of a ``SeqStmt``; replace a loop by its body
with the loop variable bound to its minimum; shrink loop extents and buffer shapes; drop
``T.match_buffer`` / ``T.Buffer`` attributes (strides, offsets, ``axis_separators``) one at a
time; inline ``LetStmt`` values; drop PrimFuncs no Relax function calls (``DropFunctions``
already does that for ``call_tir`` callees). Use ``tvm.tirx.stmt_functor`` to rewrite and
``tvm.tirx.analysis.verify_well_formed`` in ``finish`` for the cheap check.
"""
from __future__ import annotations

TIR_PASSES: tuple = ()   # IRPass subclasses over PrimFuncs; appended to ir_passes.PASSES
