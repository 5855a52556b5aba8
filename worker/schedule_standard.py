"""The standard modules that tests, benches and the self-check schedule.

``STANDARD``: the two modules the tests and the bench schedule (a hand-written matmul, a
legalized Relax matmul + add); ``run_standard`` builds a scheduled one and returns its result
next to numpy's.

TVM 0.27 gets a good share of random schedules wrong (crashes, segfaults, wrong values: about
one schedule in six on the standard modules, ``bench/schedule_stats.py``). ``KNOWN_BUGS`` keeps
a minimal reproduction of each defect met, as a schedule on ``STANDARD[bug["module"]]``.
"""
from __future__ import annotations

from fuzz.tir.schedule_bugs import KNOWN_BUGS  # noqa: F401  (re-exported: schedules on STANDARD)

from .schedule_steps import _tvm


MATMUL_SCRIPT = '''
# from tvm.script import ir as I
# from tvm.script import tirx as T

@I.ir_module
class Module:
    @T.prim_func(s_tir=True)
    def matmul(A: T.Buffer((16, 12), "float32"), B: T.Buffer((12, 8), "float32"),
               D: T.Buffer((16, 8), "float32")):
        T.func_attr({"global_symbol": "matmul", "tir.noalias": True})
        C = T.sblock_alloc_buffer((16, 8), "float32")
        for i, j, k in T.grid(16, 8, 12):
            with T.sblock("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(16, 8):
            with T.sblock("D"):
                vi, vj = T.axis.remap("SS", [i, j])
                D[vi, vj] = T.max(C[vi, vj], T.float32(0))
'''


def matmul_module():
    """A hand-written s_tir matmul (a reduction with an init) and a ReLU epilogue reading an
    intermediate buffer: every primitive has something to work on."""
    tvm, _ = _tvm()
    return tvm.script.from_source(MATMUL_SCRIPT)


def legalized_module(ops=("relax.matmul", "relax.add")):
    """Relax ``main(x: [8,16], w: [16,12], b: [8,12])`` chaining ``ops`` on float32 tensors
    (``relax.matmul`` by w, ``relax.add`` of b (or of itself, when the shape is not [8,12]),
    ``relax.sum`` over the last axis), after ``LegalizeOps``: one PrimFunc per op next to the
    Relax function."""
    from tvm import relax

    from fuzz.materialize import materialize
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy

    f32 = "float32"
    params = [Param("x", TensorTy([8, 16], f32)), Param("w", TensorTy([16, 12], f32)),
              Param("b", TensorTy([8, 12], f32))]
    nodes, cur, shape = [], "x", [8, 16]
    for i, op in enumerate(ops):
        name = f"v{i + 1}"
        if op == "relax.matmul" and shape == [8, 16]:
            args, shape = [cur, "w"], [8, 12]
        elif op == "relax.add":
            args = [cur, "b"] if shape == [8, 12] else [cur, cur]
        elif op == "relax.sum" and len(shape) > 1:
            args, shape = [cur], shape[:-1]
        else:
            raise ValueError(f"{op} after a {shape} tensor")
        attrs = {"axis": [-1], "keepdims": False} if op == "relax.sum" else {}
        nodes.append(Node(name, op, args, attrs, TensorTy(list(shape), f32)))
        cur = name
    prog = Program([Function("main", params, [Block(True, nodes)], cur)], "main",
                   {"mode": "valid", "seed": 0})
    return relax.transform.LegalizeOps()(materialize(prog))


STANDARD = {"matmul": matmul_module, "relax_mm_add": legalized_module}


def run_standard(name: str, mod, seed: int = 0):
    """Build ``mod`` (a scheduled ``STANDARD[name]()``) for llvm, run it on random inputs in
    [-1, 1) and return ``(result, numpy reference)``."""
    import numpy as np

    tvm, _ = _tvm()
    rs = np.random.RandomState(seed)
    if name == "matmul":
        a = rs.uniform(-1, 1, (16, 12)).astype("float32")
        b = rs.uniform(-1, 1, (12, 8)).astype("float32")
        f = tvm.tirx.build(mod, target="llvm")
        d = tvm.runtime.tensor(np.zeros((16, 8), "float32"))
        f["matmul"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), d)
        return d.numpy(), np.maximum(a @ b, 0)
    from tvm import relax

    x, w, b = (rs.uniform(-1, 1, s).astype("float32") for s in ((8, 16), (16, 12), (8, 12)))
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(v) for v in (x, w, b)]).numpy()
    return out, x @ w + b
