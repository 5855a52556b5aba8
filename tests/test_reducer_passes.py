"""The pass registry: every pass says how it counts toward its kind's size key, a pass naming
a measure the key lacks is refused, and on generated cases every candidate a pass builds from
the case is smaller at a measure it declares. A candidate that is not smaller is counted
(``no_progress``), by this test and by the driver, never skipped silently."""
import json

import pytest

from fuzz.generate import generate
from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from fuzz.outcome import Outcome
from fuzz.tir.generate import generate_tir
from reducer.ddmin import Driver
from reducer.passes import registry
from reducer.passes.base import ModelPass
from reducer.passes.model.context import ModelContext
from reducer.passes.model.size import smaller
from fuzz.retype import retype

VARIANTS = [{"target": {"kind": "llvm", "mcpu": "haswell"}, "pipeline": "passes",
             "passes": ["LegalizeOps", "FuseOps"], "exec_mode": "compiled"},
            {"target": {"kind": "c"}, "pipeline": "zero", "extra_passes": ["FoldConstant"]},
            {"target": {"kind": "llvm"}, "pipeline": "scheduled", "schedule_seed": 7,
             "schedule_steps": [{"func": "add", "prim": "split", "block": "T_add", "loop": 0,
                                 "factors": [2, None]},
                                {"func": "add", "prim": "parallel", "block": "T_add",
                                 "loop": 0}]}, {}]

# Passes whose edit can leave every measure unchanged (or grow one), so that candidate is
# never accepted. Known, and kept as they are; a pass not listed here must always progress.
KNOWN_NO_PROGRESS = {
    "model": {
        "return_dead_value",    # a dead value returned in place of a plain result that
                                # needed no parameter of its own: nothing counted changes
        "inline_calls",         # inlining a call to a callee still called elsewhere adds nodes
    },
    "tir": {
        "tir-simplify-values",  # a lone variable stored becomes a constant: same size
    },
    "ir": {                     # the text measure sees attributes and dims only roughly:
        "return_dead_value",    # the returned value changes, the size may not
        "reset_attrs",          # a default may print no shorter (axis=-1 for axis=2)
        "static_dims",          # n becomes 4: the text counts integers, not names
        "shrink_dims",          # TVM may re-infer a longer shape downstream
    },
}


def _check(kind, passes, state, chosen_sets, tally):
    """Apply each pass to ``state``; tally which measure each candidate decreased."""
    for p in passes:
        sets = [frozenset(c) for c in chosen_sets(p.count(state))]
        for cand in p.apply_many(state, sets) if sets else []:
            if cand is None:
                continue
            m = registry.decreased(kind, cand, state)
            assert m is None or m in p.measures, (p.name, m, p.measures)
            tally.setdefault(p.name, {"smaller": 0, "no_progress": 0})
            tally[p.name]["no_progress" if m is None else "smaller"] += 1


def _some(n):
    return ([range(n)] + [[i] for i in range(min(n, 5))]) if n else []


def test_every_registered_pass_declares_measures_its_size_key_counts():
    for kind, k in registry.KINDS.items():
        assert k.passes
        for cls in k.passes:
            assert cls.measures and set(cls.measures) <= set(k.measures), (kind, cls.name)
        registry.check(kind, k.passes, k.measures)   # what import did: no error


def test_a_pass_whose_measures_the_size_key_lacks_is_refused():
    class Recolour(ModelPass):
        name = "recolour"
        measures = ("colour",)

    with pytest.raises(registry.PassError, match="'colour'.*does not count"):
        registry.check("model", [Recolour], registry.KINDS["model"].measures)

    class Silent(ModelPass):
        name = "silent"

    with pytest.raises(registry.PassError, match="declares no measures"):
        registry.check("model", [Silent], registry.KINDS["model"].measures)

    class Twin(ModelPass):
        name = "remove_nodes"
        measures = ("nodes",)

    with pytest.raises(registry.PassError, match="name is taken"):
        registry.check("model", list(registry.KINDS["model"].passes) + [Twin],
                       registry.KINDS["model"].measures)


def test_model_pass_candidates_are_smaller_at_a_declared_measure():
    tally: dict = {}
    for seed in range(40):
        prog = generate(seed, mode="valid" if seed % 3 else "near-valid")
        if seed % 3 == 2:   # an ONNX case, its export/import flags on (simplify_onnx)
            from fuzz.model import OnnxProgram

            prog = OnnxProgram.of(prog, {"opset": 18, "weights": True, "dynamic": True,
                                         "shape_ops": True, "keep_params_in_input": True})
        elif seed % 3 == 1 and seed % 2:   # a PyTorch case, options off their defaults
            from fuzz.model import TorchProgram

            prog = TorchProgram.of(prog, {"weights": True, "decompose": True,
                                          "keep_params_as_input": True,
                                          "run_ep_decomposition": False})
        prog.meta["variants"] = json.loads(json.dumps(VARIANTS))
        ops = [n.op for f in prog.functions for n in f.nodes() if n.op.startswith("relax.")]
        hinted = Outcome("fail", "crash", message=f"Op({ops[0]})",
                         extra={"variant": VARIANTS[0]})
        for outcome in (None, hinted, Outcome("fail", "verifier_build")):
            passes = registry.passes("model", ModelContext.of(prog, outcome))
            _check("model", passes, prog, _some, tally)
    _assert_progress("model", tally)


def test_model_passes_edit_cases_holding_a_dynamic_strided_slice():
    """Cases holding a dyn_slice (fuzz.dynshape): every pass's candidates are smaller at a
    declared measure, and the passes build well-typed candidates that keep the slice."""
    from fuzz.generate import slice_alone
    from fuzz.retype import IllFormed

    progs = [p for p in (generate(s) for s in range(1000))
             if any(n.op == "dyn_slice" for f in p.functions for n in f.nodes())][:3]
    progs += [slice_alone(s) for s in range(3)]
    assert len(progs) == 6
    tally: dict = {}
    kept = 0
    for prog in progs:
        prog.meta["variants"] = json.loads(json.dumps(VARIANTS))
        hinted = Outcome("fail", "crash", message="Op(relax.dynamic_strided_slice)",
                         extra={"variant": VARIANTS[0]})
        for outcome in (None, hinted):
            passes = registry.passes("model", ModelContext.of(prog, outcome))
            _check("model", passes, prog, _some, tally)
            for p in passes:
                for cand in p.apply_many(prog, [frozenset([0])]) if p.count(prog) else []:
                    if cand is None or not any(n.op == "dyn_slice" for f in cand.functions
                                               for n in f.nodes()):
                        continue
                    try:
                        retype(cand.copy(), strict=True)
                        kept += 1
                    except IllFormed:
                        pass   # the driver skips it
    assert kept >= 10, kept
    stuck = {name for name, t in tally.items() if t["no_progress"]}
    assert stuck <= KNOWN_NO_PROGRESS["model"], stuck - KNOWN_NO_PROGRESS["model"]


def test_tir_pass_candidates_are_smaller_at_a_declared_measure():
    tally: dict = {}
    for seed in range(30):
        prog = generate_tir(seed, mode="valid" if seed % 2 else "near_valid")
        prog.meta["variants"] = [{"passes": ["A", "B"]}, {"passes": ["C"]}]
        prog.meta["schedule"] = {"applied": [{"prim": "split"}, {"prim": "reorder"}]}
        _check("tir", registry.passes("tir"), prog, _some, tally)
    _assert_progress("tir", tally)


def test_ir_pass_candidates_are_smaller_at_a_declared_measure():
    from fuzz.materialize import materialize, to_script
    from reducer import jobs
    from worker.script_guard import UnsafeScript, check_script

    class InProcess:   # what reducer.jobs does in the sandbox child, here in process
        def __init__(self, cls, hints, counts):
            self.name, self.measures, self.hints, self.counts = cls.name, cls.measures, \
                hints, counts

        def count(self, text):
            return self.counts[self.name]

        def apply_many(self, text, chosen):
            return jobs.ir_apply({"text": text, "pass": self.name, "hints": self.hints,
                                  "chosen": [sorted(c) for c in chosen]})["texts"]

    tally: dict = {}
    for seed in range(30):
        prog = generate(seed)
        text = to_script(materialize(prog))
        if "metadata" in text:
            continue   # a rebuild adds source spans to a metadata section: the text grows
        try:
            check_script(text)
        except UnsafeScript:
            continue   # the script guard refuses it (the child would too)
        hints = [next(n.op for f in prog.functions for n in f.nodes()
                      if n.op.startswith("relax.")).split(".", 1)[1]]
        counts = jobs.ir_count({"text": text, "hints": hints})["counts"]
        passes = [InProcess(cls, hints, counts) for cls in registry.KINDS["ir"].passes]
        _check("ir", passes, text, _some, tally)
    _assert_progress("ir", tally)


def _assert_progress(kind, tally):
    stuck = {name for name, t in tally.items() if t["no_progress"]}
    assert stuck <= KNOWN_NO_PROGRESS[kind], stuck - KNOWN_NO_PROGRESS[kind]
    # The sample exercises the passes: all but at most one made a smaller candidate.
    missing = set(registry.names(kind)) - {name for name, t in tally.items() if t["smaller"]}
    assert len(missing) <= 1, missing


def test_the_driver_counts_candidates_that_are_never_smaller():
    """A pass whose edit no measure counts (here: renaming a node) builds candidates the
    driver never accepts: they show as no_progress and in the log, not as nothing."""
    class Rename(ModelPass):
        name = "rename"
        measures = ("nodes",)   # a false claim: a rename removes nothing

        def targets(self, prog):
            return [n.name for n in prog.main.nodes() if n.name != prog.main.ret]

        def edit(self, prog, chosen):
            for name in chosen:
                prog.main.node(name).name = name + "_r"
                for n in prog.main.nodes():
                    n.args = [a + "_r" if a == name else a for a in n.args]
            return True

    f32 = TensorTy([4, 8], "float32")
    prog = retype(Program([Function("main", [Param("x", f32), Param("y", f32)], [Block(True, [
        Node("a", "relax.add", ["x", "y"]), Node("b", "relax.tanh", ["a"])])], "b")], "main",
        {"mode": "valid", "seed": 0, "variants": [{}]}))
    p = Rename(ModelContext.of(prog))
    cand = p.apply(prog, frozenset([0]))
    assert cand is not None and registry.decreased("model", cand, prog) is None
    logs, asked = [], []
    d = Driver(lambda cs: (asked.extend(cs), [True] * len(cs))[1], smaller, log=logs.append)
    assert d.reduce(prog, [p]) is prog
    assert not asked and d.accepted == 0
    assert d.no_progress == d.per_pass["rename"][2] > 0
    assert any("rename: no progress" in line for line in logs)


def _indexing_program():
    """take(x: float16, i: int64) where (m: bool): each kind of dtype once."""
    return retype(Program([Function("main", [
        Param("x", TensorTy([4, 8], "float16")), Param("i", TensorTy([3], "int64"), 0, 3),
        Param("m", TensorTy([3, 8], "bool"), 0, 1)], [Block(True, [
            Node("t", "relax.take", ["x", "i"], {"axis": 0, "mode": "fast"}),
            Node("z", "relax.zeros_like", ["t"], {"dtype": None}),
            Node("w", "relax.where", ["m", "t", "z"])])], "w")], "main",
        {"mode": "valid", "seed": 0, "variants": [{}]}))


def test_simplify_dtypes_keeps_an_index_an_integer():
    """A reduced case writes float32 for a float input and int32 for an integer one (an
    index operand of float32 is not what a user writes, and its values keep their bounds);
    a bool mask stays bool."""
    prog = _indexing_program()
    p = registry.by_name("model", "simplify_dtypes")(ModelContext.of(prog))
    assert p.targets(prog) == ["float16", "int64"]
    cand = p.apply(prog, frozenset(range(2)))
    tys = {q.name: (q.ty.dtype, q.lo, q.hi) for q in cand.main.params}
    assert tys == {"x": ("float32", -2.0, 2.0), "i": ("int32", 0, 3), "m": ("bool", 0, 1)}
    assert registry.decreased("model", cand, prog) == "dtypes"
    assert p.targets(cand) == []


def test_ir_simplify_dtypes_keeps_an_index_an_integer():
    from fuzz.materialize import materialize, to_script
    from reducer import jobs

    text = to_script(materialize(_indexing_program()))
    out = jobs.ir_apply({"text": text, "pass": "simplify_dtypes", "hints": ["take"],
                         "chosen": [[0, 1]]})["texts"][0]
    assert 'x: R.Tensor((4, 8), dtype="float32")' in out, out
    assert 'i: R.Tensor((3,), dtype="int32")' in out, out
    assert 'm: R.Tensor((3, 8), dtype="bool")' in out, out
    assert registry.decreased("ir", out, text) == "text"
