"""Delta passes on the TIR program model (fuzz/tir/model.py): compile variants and schedule
steps, whole statements, loops and conditionals unwrapped, then buffer attributes,
expressions and extents. Edits need no TVM; a candidate that no longer renders or no longer
fails the same way is refused by the sandbox oracle."""
