"""Delta passes on the Relax program model (fuzz.model), coarse to fine; the order is in
reducer/passes/registry.py. Edited copies are re-typed with the catalogue's shape rules
(fuzz.retype) and, for edits of shapes or dtypes, run through the numpy reference: a
candidate that fails either is ill-formed and never reaches the sandbox."""
