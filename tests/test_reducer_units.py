"""The reducer's parts that need no TVM: the ddmin driver, line ddmin, cheap well-formedness
(re-typing with the catalogue's shape rules), the model passes, sizes, atomic output."""
import pytest

from fuzz.generate import generate
from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from fuzz.outcome import Outcome
from reducer.api import ReduceError, _stable_signature, comment_imports
from reducer.ddmin import Driver
from reducer.linedd import line_ddmin
from reducer.output import OutDir, new_dir, write_text
from reducer.passes import registry
from reducer.passes.model.context import ModelContext
from reducer.passes.model.isolate_op import IsolateOp
from reducer.passes.model.remove_nodes import RemoveNodes
from reducer.passes.model.shrink_dims import ShrinkDims
from reducer.passes.model.shrink_outputs import ShrinkOutputs
from reducer.passes.model.size import smaller
from fuzz.retype import IllFormed, frozen_nodes, retype
from reducer.size import script_bindings, script_size_key


# --- the generic driver ------------------------------------------------------------------
class RemoveItems:
    name = "remove"

    def count(self, s):
        return len(s)

    def apply_many(self, s, chosen):
        return [tuple(x for i, x in enumerate(s) if i not in c) for c in chosen]


@pytest.mark.parametrize("width", [1, 3])
def test_driver_finds_the_minimal_subset(width):
    calls = []

    def test(cands):
        calls.extend(cands)
        return [{3, 17, 30} <= set(c) for c in cands]

    d = Driver(test, lambda a, b: len(a) < len(b), width=width)
    assert d.reduce(tuple(range(40)), [RemoveItems()]) == (3, 17, 30)
    assert len(calls) < 60


def test_driver_skips_ill_formed_and_not_smaller_candidates_without_the_oracle():
    class Odd(RemoveItems):
        def apply_many(self, s, chosen):   # removing an even element is "ill-formed"
            return [None if any(s[i] % 2 == 0 for i in c) else
                    tuple(x for i, x in enumerate(s) if i not in c) for c in chosen]

    seen = []
    d = Driver(lambda cs: (seen.extend(cs), [True] * len(cs))[1], lambda a, b: len(a) < len(b))
    assert d.reduce(tuple(range(8)), [Odd()]) == (0, 2, 4, 6)
    assert all(all(x % 2 == 1 for x in range(8) if x not in c) for c in seen)
    assert d.skipped > 0


def test_line_ddmin_is_one_minimal():
    text = "".join(f"line {i}\n" for i in range(20))
    got, calls = line_ddmin(text, lambda cs: ["line 4\n" in c and "line 13\n" in c for c in cs])
    assert got == "line 4\nline 13\n" and calls > 0


# --- programs ----------------------------------------------------------------------------
def _prog(nodes, params, ret, variants=None):
    p = Program([Function("main", params, [Block(True, nodes)], ret)], "main",
                {"mode": "valid", "seed": 0, "variants": variants or [{}]})
    return retype(p)


def cosh_case():
    """noise around a float16 cosh (llvm cannot lower it on 0.27)."""
    f32, f16 = TensorTy([4, 8], "float32"), TensorTy([4, 8], "float16")
    nodes = [Node("a", "relax.add", ["x", "y"]), Node("b", "relax.multiply", ["a", "x"]),
             Node("h1", "relax.abs", ["h"]), Node("c", "relax.cosh", ["h1"]),
             Node("c32", "relax.astype", ["c"], {"dtype": "float32"}),
             Node("d", "relax.add", ["b", "c32"]), Node("e", "relax.tanh", ["d"]),
             Node("t", "tuple", ["e", "a"])]
    return _prog(nodes, [Param("x", f32), Param("y", f32), Param("h", f16)], "t")


def test_retype_accepts_every_generated_program():
    for seed in range(60):
        for mode in ("valid", "near-valid"):
            p = generate(seed, mode=mode)
            retype(p.copy(), strict=True, frozen=frozen_nodes(p))


def test_retype_rejects_broken_shape_rules():
    p = cosh_case()
    p.main.params[1].ty = TensorTy([3, 8], "float32")   # add(x: 4x8, y: 3x8) cannot broadcast
    with pytest.raises(IllFormed):
        retype(p)
    q = cosh_case()
    q.main.node("d").args = ["b", "nope"]
    with pytest.raises(IllFormed):
        retype(q)


def _apply(cls, prog, chosen=None):
    p = cls(ModelContext.of(prog))
    n = p.count(prog)
    return p, n, p.apply(prog, frozenset(range(n)) if chosen is None else frozenset(chosen))


def test_remove_nodes_rewires_to_same_typed_inputs_or_new_parameters():
    prog = cosh_case()
    names = [n.name for n in prog.main.nodes()]
    _, _, cand = _apply(RemoveNodes, prog, [names.index("h1"), names.index("c32")])
    c = cand.main.node("c")
    assert c.args == ["h"]                          # abs(h) -> h: same type
    d = cand.main.node("d")
    new = d.args[1]                                  # astype to float32: a new parameter
    assert new not in {"x", "y", "h"} and new in {p.name for p in cand.main.params}
    assert cand.main.value_types()[new].to_json() == TensorTy([4, 8], "float32").to_json()
    assert Program.loads(cand.dumps()).dumps() == cand.dumps()


def test_shrink_outputs_unwraps_and_shrink_dims_keeps_rules():
    prog = cosh_case()
    p, n, cand = _apply(ShrinkOutputs, prog, [1])
    assert cand.main.ret == "e" and "t" not in [x.name for x in cand.main.nodes()]
    _, _, small = _apply(ShrinkDims, prog)
    assert all(d == 1 for q in small.main.params for d in q.ty.shape)
    assert small.main.node("e").ty.shape == [1, 1]
    # matmul ties dims together: shrinking one value everywhere keeps it well-typed
    f = TensorTy([3, 5], "float32")
    mm = _prog([Node("m", "relax.matmul", ["a", "b"], {"out_dtype": None})],
               [Param("a", f), Param("b", TensorTy([5, 2], "float32"))], "m")
    _, n, cand = _apply(ShrinkDims, mm, [0])   # 5 -> 1 in both operands
    assert cand is not None and cand.main.node("m").ty.shape == [3, 2]


def test_shrink_outputs_drops_any_field_of_a_longer_tuple():
    """One field of a 3-tuple can go: the tuple's own type changes with it. A strict retype
    refused that, so ddmin (which drops one chunk at a time) kept unrelated outputs: a
    PyTorch case reduced to `return (p4, _t1, r1, )` around its one failing op."""
    prog = cosh_case()
    prog.main.node("t").args = ["e", "a", "x"]
    prog = retype(prog)
    for drop, kept in (([0], ["a", "x"]), ([2], ["e", "a"]), ([0, 2], None)):
        _, _, cand = _apply(ShrinkOutputs, prog, drop)
        assert cand is not None, drop
        if kept is None:
            assert cand.main.ret == "a"
        else:
            assert cand.main.node("t").args == kept
            assert len(cand.main.node("t").ty.fields) == 2
    # a returned tuple also read by index keeps its fields (the index would shift)
    prog.main.blocks[0].nodes.append(Node("g", "get_item", ["t"], {"index": 1}))
    prog = retype(prog)
    assert _apply(ShrinkOutputs, prog, [0])[2] is None


def test_every_pass_candidate_is_well_formed_or_none():
    for seed in range(25):
        prog = generate(seed, mode="valid" if seed % 3 else "near-valid")
        prog.meta["variants"] = [{"target": {"kind": "llvm", "mcpu": "haswell"},
                                  "pipeline": "passes", "passes": ["LegalizeOps", "FuseOps"],
                                  "exec_mode": "compiled"}, {}]
        ctx = ModelContext.of(prog)
        for p in registry.passes("model", ctx):
            n = p.count(prog)
            for chosen in ([range(n)] + [[i] for i in range(min(n, 4))]):
                cand = p.apply(prog, frozenset(chosen))
                if cand is not None:
                    retype(cand.copy(), frozen=ctx.frozen)
                    Program.loads(cand.dumps())


def test_size_key_orders_bindings_first():
    prog = cosh_case()
    _, _, cand = _apply(RemoveNodes, prog, [0])
    assert smaller(cand, prog) and not smaller(prog, cand)


# --- inputs, sizes, outputs -----------------------------------------------------------------
def test_stability_check_refuses_flaky_and_passing_inputs():
    class Fake:
        def __init__(self, outs):
            self.outs, self.stats = outs, {"replays": 0}

        def run(self, cands):   # the next outcomes, one per candidate
            out, self.outs = self.outs[:len(cands)], self.outs[len(cands):]
            return out

    crash = Outcome("fail", "crash", "build", message="X")
    other = Outcome("fail", "crash", "run", message="Y")
    with pytest.raises(ReduceError, match="only sometimes"):
        _stable_signature(Fake([crash, other, crash]), "case", None, None)
    with pytest.raises(ReduceError, match="only sometimes"):
        _stable_signature(Fake([crash, Outcome("pass"), crash]), "case", None, None)
    with pytest.raises(ReduceError, match="does not fail"):
        _stable_signature(Fake([Outcome("pass")] * 3), "case", None, None)
    assert _stable_signature(Fake([crash] * 3), "case", None, None) is crash
    # An input that takes minutes to judge (a large module) is replayed once, not three times.
    slow = Outcome("fail", "crash", "build", message="X", seconds=100.0)
    fake, said = Fake([slow, other, other]), []
    assert _stable_signature(fake, "script", None, None, said.append) is slow
    assert len(fake.outs) == 2 and fake.stats["replays"] == 1 and "replayed once" in said[0]


def test_script_sizes_and_imports():
    text = ('from tvm.script import relax as R\n\n@I.ir_module\nclass M:\n    @R.function\n'
            '    def main(x: R.Tensor((2,), "float32")):\n        n = T.int64()\n'
            '        a: R.Tensor((2,), "float32") = R.add(x, x)\n        b = R.exp(a)\n'
            '        return b\n')
    assert script_bindings(text) == 2
    assert comment_imports(text).startswith("# from tvm.script import relax as R\n")
    assert script_size_key(text.replace("(2,)", "(1,)")) < script_size_key(text)


def test_outputs_are_atomic_and_keep_what_was_there(tmp_path):
    (tmp_path / "case.json").write_text("old")
    w = OutDir(tmp_path)
    w.write("case.json", "new 1")
    w.write("case.json", "new 2")          # this run's own progress: replaced, no backup
    assert (tmp_path / "case.json").read_text() == "new 2"
    assert (tmp_path / "case.json.~1~").read_text() == "old"
    assert not (tmp_path / "case.json.~2~").exists()
    write_text(tmp_path / "case.json", "other run")
    assert (tmp_path / "case.json.~2~").read_text() == "new 2"
    assert new_dir(tmp_path, "x") != new_dir(tmp_path, "x")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_isolate_op_keeps_the_named_op_and_its_declared_inputs():
    prog = cosh_case()
    prog.main.params[2].actual, prog.main.params[2].ty = prog.main.params[2].ty, \
        TensorTy(None, "float16", 2)                      # h erased to ndim only
    prog.main.node("h1").args = ["h"]
    outcome = Outcome("fail", "crash", message='unknown intrinsic ir.Op(name="tirx.cosh")',
                      extra={"variant": {}})
    p = IsolateOp(ModelContext.of(prog, outcome))
    assert p.targets(prog) == [("main", "c")]
    cand = p.apply(prog, frozenset([0]))
    assert [n.op for n in cand.main.nodes()] == ["relax.cosh"]
    assert cand.meta["variants"] == [{}]
    (q,) = cand.main.params                                # h2's value: a concrete tensor
    assert q.ty.to_json() == TensorTy([4, 8], "float16").to_json()
    p2 = IsolateOp(ModelContext.of(prog, outcome))
    prog.main.node("c").args = ["h"]                       # now cosh reads h itself
    cand = p2.apply(prog, frozenset([0]))
    assert cand.main.params[0].ty.shape is None and cand.main.params[0].actual is not None


def test_a_slice_promised_in_bounds_keeps_its_extent():
    # assume_inbound=True is the caller's promise; shrinking the dim below the slice would
    # turn a TVM inference bug into undefined input (seen: x[4:3:-1] reduced onto a (1, 1)).
    from fuzz.catalogue import CATALOGUE

    spec = CATALOGUE["relax.strided_slice"]
    attrs = {"axes": [0], "begin": [4], "end": [3], "strides": [-1], "assume_inbound": True}
    assert spec.infer([TensorTy([5, 1], "float32")], attrs).shape == [1, 1]
    with pytest.raises(ValueError, match="assume_inbound"):
        spec.infer([TensorTy([4, 1], "float32")], attrs)
    assert spec.infer([TensorTy([4, 1], "float32")], dict(attrs, assume_inbound=False)).shape \
        == [0, 1]


def test_a_near_valid_reports_repro_text_says_how_repro_reads_it_not_that_it_is_ill_formed():
    """Campaign 140000's alloc_tensor segfault: well_formed accepted the mutant, yet the report
    also called it "ill-formed on purpose"; and its repro.py loads JSON, not parsed text."""
    from reducer.report import _repro_text

    o = Outcome("fail", "signal", "run", "SIGSEGV", "killed by SIGSEGV in run")
    meta = {"mode": "near-valid", "mutations": ["wrong_annotation", "wrong_annotation"]}
    text = _repro_text(o, meta, module_json=True)
    assert "ill-formed" not in text
    assert "(a near-valid mutant: wrong_annotation)" in text and "loads TVM's JSON" in text
    assert "check_well_formed=False" in _repro_text(o, meta, module_json=False)
    assert "near-valid" not in _repro_text(o, {"mode": "valid"}, module_json=False)
