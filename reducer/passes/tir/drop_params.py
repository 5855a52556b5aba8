from __future__ import annotations

import json

from fuzz.tir import model as M

from ..base import TirPass


class DropParams(TirPass):
    """Parameters the body no longer uses."""

    name = "tir-drop-params"
    measures = ("params",)

    def targets(self, prog):
        text = json.dumps([M.stmt_to_json(s) for s in prog.body])
        return [p.name for p in prog.params if f'"{p.name}"' not in text and len(prog.params) > 1]

    def edit(self, prog, chosen):
        prog.params = [p for p in prog.params if p.name not in set(chosen)]
        return bool(prog.params)
