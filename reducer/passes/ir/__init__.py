"""Delta passes on raw Relax IR: a user's TVMScript module that has no program model.

They run only inside a sandbox child (``reducer.jobs``): the text is checked by the script
guard, parsed there, edited as IR, re-typed by TVM's own normalizer, verified with
``well_formed`` and printed back. An edit TVM refuses (inference raises, the verifier says no)
gives no candidate, so it costs no oracle call. Each pass lists its elements in a fixed order,
so the parent (``reducer.script_passes``) can name a subset by indices and ask for the
candidate. Every edit goes through ``helpers.rebuild``.

Passes on the PrimFuncs inside a module would go here too (none yet), one module each and a
line in the registry: remove statements of a ``SeqStmt``; replace a loop by its body with the
loop variable bound to its minimum; shrink loop extents and buffer shapes; drop buffer
attributes (strides, offsets, ``axis_separators``) one at a time; inline ``LetStmt`` values.
Rewrite with ``tvm.tirx.stmt_functor`` and check with ``tvm.tirx.analysis.verify_well_formed``.
"""
