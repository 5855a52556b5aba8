from __future__ import annotations

from ..base import ModelPass


class DropAnnotations(ModelPass):
    """Undo near-valid promises: explicit annotations and erased parameter types."""

    name = "drop_annotations"
    measures = ("annotations",)

    def targets(self, prog):
        if self.ctx.kind == "verifier_build":
            return []   # a verifier/build disagreement is about the broken promise itself
        return ([(f.name, "node", n.name) for f in prog.functions for n in f.nodes()
                 if n.annot is not None]
                + [(f.name, "param", p.name) for f in prog.functions for p in f.params
                   if p.actual is not None])

    def edit(self, prog, chosen):
        for fname, what, name in chosen:
            f = prog.func(fname)
            if what == "node":
                f.node(name).annot = None
            else:
                p = next(p for p in f.params if p.name == name)
                p.ty, p.actual = p.actual, None
        return True
