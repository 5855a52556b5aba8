"""Delta passes, one small module each, grouped by the kind of case they edit.

  base.py      the base classes: a pass lists elements (``targets``) and edits a copy
               (``edit``); it declares the size-key components its edits decrease
  registry.py  every pass of every kind, in driver order, one line each
  model/       the Relax program model (fuzz.model)     size: model/size.py
  tir/         the TIR program model (fuzz.tir.model)   size: tir/size.py
  ir/          raw Relax IR from TVMScript (sandbox child only)   size: reducer/size.py
"""
