from __future__ import annotations

from fuzz.catalogue import CATALOGUE
from fuzz.generate import default_range
from fuzz.model import Block, Function, Node, Param, TensorTy

from ...hints import matches
from ..base import ModelPass
from .helpers import runtime, variants


class IsolateOp(ModelPass):
    """The op the failure names (or, for a verifier/build disagreement, the node with the
    mutant's wrong annotation) alone in the entry function, its inputs as parameters, built
    the failing way only: one call when the guess about the culprit is right."""

    name = "isolate_op"
    measures = ("nodes", "functions", "variants", "params")

    def targets(self, prog):
        nodes = [(f, n) for f in prog.functions for n in f.nodes()]
        if len(nodes) <= 1:
            return []
        if self.ctx.hints:
            return [(f.name, n.name) for f, n in nodes
                    if n.op in CATALOGUE and matches(n.op, self.ctx.hints)]
        if self.ctx.kind == "verifier_build":
            # A verifier/build disagreement of a near-valid mutant: its wrong annotation.
            return [(f.name, n.name) for f, n in nodes if n.op in CATALOGUE and n.annot]
        return []

    def edit(self, prog, chosen):
        old = prog.main
        params: list[Param] = []
        nodes: list[Node] = []
        made: dict = {}
        for fname, name in chosen:
            f = prog.func(fname)
            n, rt = f.node(name), runtime(f)
            srcp = {p.name: p for p in f.params}
            args = []
            for a in n.args:
                if (fname, a) not in made:
                    made[(fname, a)] = name_ = f"p{len(params) + 1}"
                    t = rt[a]
                    if a in srcp:   # a parameter stays as declared (erased types are bugs too)
                        q = srcp[a]
                        params.append(Param(name_, q.ty, q.lo, q.hi, q.actual))
                    elif isinstance(t, TensorTy) and t.shape is not None and t.dtype:
                        params.append(Param(name_, TensorTy(list(t.shape), t.dtype),
                                            *default_range(t.dtype)))
                    else:
                        return False
                args.append(made[(fname, a)])
            nodes.append(Node(f"v{len(nodes) + 1}", n.op, args, dict(n.attrs), n.ty, n.annot))
        ret = nodes[0].name
        if len(nodes) > 1:
            nodes.append(Node("out", "tuple", [x.name for x in nodes], {}))
            ret = "out"
        dataflow = any(b.dataflow for b in old.blocks)
        prog.functions = [Function(prog.entry, params, [Block(dataflow, nodes)], ret)]
        vs = variants(prog)
        if self.ctx.failing_variant in vs:
            prog.meta["variants"] = [self.ctx.failing_variant]
        return True
