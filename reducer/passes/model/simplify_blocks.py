from __future__ import annotations

from fuzz.model import Block

from ..base import ModelPass


class SimplifyBlocks(ModelPass):
    """One block per function, then no dataflow block (shorter TVMScript)."""

    name = "simplify_blocks"
    measures = ("blocks",)

    def targets(self, prog):
        out = []
        for f in prog.functions:
            if sum(1 for b in f.blocks if b.nodes) < len(f.blocks):
                out.append((f.name, "empty"))
            if len(f.blocks) > 1:
                out.append((f.name, "merge"))
            if any(b.dataflow for b in f.blocks):
                out.append((f.name, "plain"))
        return out

    def edit(self, prog, chosen):
        for fname, what in chosen:
            f = prog.func(fname)
            if what == "empty":
                f.blocks = [b for b in f.blocks if b.nodes]
            elif what == "merge":
                f.blocks = [Block(f.blocks[0].dataflow, [n for b in f.blocks for n in b.nodes])]
            else:
                for b in f.blocks:
                    b.dataflow = False
        return True
