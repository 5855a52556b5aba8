"""Control flow in Relax cases (fuzz/control.py): R.If (nested, bindings in both branches,
computed or passed-in conditions), loops as recursive functions guarded by R.If, the
wrong_ret mutant that reaches apache/tvm#17348, and the reducer on such cases. Real TVM, real
sandbox."""
import collections
import functools

import numpy as np
import pytest

from fuzz.generate import generate
from fuzz.model import Program
from fuzz.retype import retype
from fuzz.triage import KNOWN, auto_status

SEEDS = range(400)


def _run_all(progs, timeout=120):
    """Each program judged in the crash-isolated sandbox, as a campaign judges it."""
    from worker.sandbox_runner import SandboxRunner
    runner = SandboxRunner(timeout=timeout)
    try:
        return runner.run_many(progs)
    finally:
        runner.close()


def _has_if(p):
    return any(n.op == "if" for f in p.functions for n in f.nodes())


def _loops(p):
    return [f for f in p.functions if f.kind == "func" and any(
        m.op == "call" and m.attrs["func"] == f.name
        for b in p.functions if b.kind == "branch" for m in b.nodes())]


@pytest.fixture(scope="module")
def cf_programs():
    return [p for p in (generate(s) for s in SEEDS) if _has_if(p)]


def test_generation_mixes_in_control_flow_of_every_kind(cf_programs):
    share = len(cf_programs) / len(SEEDS)
    assert 0.12 <= share <= 0.3, share
    seen = collections.Counter()
    for p in cf_programs:
        by = {f.name: f for f in p.functions}
        for f in p.functions:
            nodes = {n.name: n for n in f.nodes()}
            params = {q.name for q in f.params}
            for n in f.nodes():
                if n.op != "if":
                    continue
                seen["nested" if f.kind == "branch" else "top"] += 1
                seen["cond passed in" if n.args[0] in params else "cond computed"] += 1
                seen["tuple result" if n.ty.to_json()["kind"] == "tuple" else "tensor"] += 1
                if all(by[n.attrs[s]].nodes() for s in ("then", "else")):
                    seen["bindings in both"] += 1
                if n.args[0] in nodes and nodes[n.args[0]].op in (
                        "relax.greater", "relax.less", "relax.greater_equal", "relax.less_equal"):
                    seen["compare"] += 1
        seen["loop"] += bool(_loops(p))
    for what in ("nested", "top", "cond passed in", "cond computed", "tuple result", "tensor",
                 "bindings in both", "compare", "loop"):
        assert seen[what] > 0, (what, seen)


def _dyn(p):
    return {n.op for f in p.functions for n in f.nodes() if n.op in ("shape_tensor",
            "reshape_dyn", "dps_copy", "dyn_slice") or (n.op == "match_cast" and n.attrs.get("known"))}


def test_data_dependent_shapes_are_generated_built_and_agree_with_numpy():
    """shape_of/shape_to_tensor, tensor_to_shape + match_cast to fresh dims + reshape, and
    match_cast of computed values to fresh dims: the fresh dims' values come from the run;
    and R.call_dps_packed to a function the runtime registers."""
    from fuzz.inputs import make_inputs

    progs = [p for p in (generate(s) for s in range(600)) if _dyn(p)]
    kinds = collections.Counter(op for p in progs for op in _dyn(p))
    assert all(kinds[k] for k in ("shape_tensor", "reshape_dyn", "match_cast", "dps_copy")), \
        kinds
    for p in progs[:20]:
        retype(p.copy(), strict=True)
        env, _ = make_inputs(p, 0)
        for f in p.functions:
            for n in f.nodes():
                for d, v in (n.attrs.get("known") or {}).items():
                    assert env[d] == v
    progs = [p.copy() for p in progs[:16]]
    for p in progs:
        p.meta["variants"] = None
    outs = _run_all(progs)
    verdicts = collections.Counter(o.verdict for o in outs)
    assert not verdicts["invalid"], [(p.meta["seed"], o.signature) for p, o in zip(progs, outs)
                                     if o.verdict == "invalid"]
    assert verdicts["pass"] >= 3, verdicts


def _slices(p):
    return [n for f in p.functions for n in f.nodes() if n.op == "dyn_slice"]


def _vector(f, name, shapes):
    """The values an int64 vector of ``f`` holds (the generator's ways of making one)."""
    n = {m.name: m for m in f.nodes()}[name]
    if n.op == "const":
        return [n.attrs["value"]] * n.ty.shape[0]
    if n.op == "relax.concat":
        return [v for a in n.args for v in _vector(f, a, shapes)]
    if n.op == "shape_tensor":
        return list(shapes[n.args[0]])
    assert n.op == "relax.subtract", n.op
    return [a - b for a, b in zip(*(_vector(f, a, shapes) for a in n.args))]


@functools.lru_cache(maxsize=1)
def _slice_programs():
    """Generated programs holding a dyn_slice, and the construct alone (callers copy a
    program before changing it)."""
    from fuzz.generate import slice_alone

    generated = [p for p in (generate(s) for s in range(2000)) if _slices(p)]
    return generated, [slice_alone(s) for s in range(24)]


def test_dynamic_strided_slice_is_generated_built_and_agrees_with_numpy():
    """R.dynamic_strided_slice of a static-shaped value with begin/end/strides the generator
    knows (constants, concats of them, its shape, its shape less a constant): its fresh dims
    hold numpy's extents (negative strides, indices past either end, counted from the end);
    the construct alone and generated programs holding it build on llvm, run and agree with
    numpy."""
    from fuzz.dynshape import slice_extent
    from fuzz.inputs import make_inputs

    generated, alone = _slice_programs()
    assert len(generated) >= 8, len(generated)
    seen: collections.Counter = collections.Counter()
    for p in generated[:12] + alone:
        retype(p.copy(), strict=True)
        env, _ = make_inputs(p, 0)
        for f in p.functions:
            shapes = {q.name: q.ty.shape for q in f.params}
            shapes.update({n.name: n.ty.shape for n in f.nodes()
                           if hasattr(n.ty, "shape")})
            for n in (m for m in f.nodes() if m.op == "dyn_slice"):
                x = shapes[n.args[0]]
                b, e, s = (_vector(f, a, shapes) for a in n.args[1:])
                want = [slice_extent(*t) for t in zip(b, e, s, x)]
                got = [env[d] if isinstance(d, str) else d for d in n.ty.shape]
                assert got == want and min(want) >= 1, (n.name, b, e, s, x, got)
                assert all(env[d] == v for d, v in n.attrs["known"].items())
                seen["fresh" if n.attrs["known"] else "static"] += 1
                seen["negative stride"] += any(v < 0 for v in s)
                seen["clamped"] += any(not -d <= v <= d for v, d in zip(b + e, x + x))
                seen["from the end"] += any(-d <= v < 0 for v, d in zip(b + e, x + x))
                for a in n.args[1:]:
                    seen[{m.name: m.op for m in f.nodes()}[a]] += 1
    for what in ("fresh", "static", "negative stride", "clamped", "from the end", "const",
                 "relax.concat", "shape_tensor", "relax.subtract"):
        assert seen[what], (what, seen)
    progs = [q.copy() for q in alone + generated[:12]]
    for q in progs:
        q.meta["variants"] = None
    outs = _run_all(progs)
    assert all(o.verdict == "pass" for o in outs[:len(alone)]), \
        [(q.meta["seed"], o.signature) for q, o in zip(progs, outs) if o.verdict != "pass"]
    # Generated programs: most fail on known TVM bugs of other ops (and R.If's
    # StaticPlanBlockMemory "Var is not defined"); none is the generator's, no wrong result
    # goes unexplained
    from fuzz.triage import known_reason

    rest = list(zip(progs[len(alone):], outs[len(alone):]))
    verdicts = collections.Counter(o.verdict for _, o in rest)
    assert not verdicts["invalid"], verdicts
    assert all(known_reason(q, o) for q, o in rest if o.kind == "numeric")
    assert verdicts["pass"] >= 2, verdicts


def test_a_slice_the_type_does_not_promise_is_refused_by_the_reference():
    """The reference checks each slice's extents against the dims its type states: a wrong
    static extent, or a fresh dim bound before to another value, is a ReferenceError."""
    from fuzz.generate import slice_alone
    from fuzz.inputs import make_inputs
    from fuzz.reference import ReferenceError, run

    p = next(q for q in (slice_alone(s) for s in range(50))
             if not _slices(q)[0].attrs["known"])
    env, args = make_inputs(p, 0)
    assert run(p, args, dict(env)).shape == tuple(_slices(p)[0].ty.shape)
    _slices(p)[0].ty.shape[0] += 1
    with pytest.raises(ReferenceError, match="dyn_slice"):
        run(p, args, dict(env))
    q = next(q for q in (slice_alone(s) for s in range(50)) if _slices(q)[0].attrs["known"])
    env, args = make_inputs(q, 0)
    d, v = next(iter(_slices(q)[0].attrs["known"].items()))
    with pytest.raises(ReferenceError, match="dyn_slice"):
        run(q, args, {**env, d: v + 1})


def test_slice_extent_is_numpys_and_tvms_shape_function():
    """fuzz.dynshape.slice_extent against numpy's slicing, over indices past either end."""
    from fuzz.dynshape import slice_extent

    for dim in (1, 2, 5):
        a = np.arange(dim)
        for b in range(-dim - 3, dim + 4):
            for e in range(-dim - 3, dim + 4):
                for s in (-3, -2, -1, 1, 2, 3):
                    assert slice_extent(b, e, s, dim) == len(a[b:e:s])


def test_a_case_holding_a_slice_reduces_to_it_and_repro_reproduces(tmp_path):
    """The reducer on a generated case holding a dyn_slice in a dataflow block, built with
    FoldConstant before the default pipeline: TVM 0.27's FoldConstant leaves the slice's
    shape-function bindings calling a ``shape_func`` the module lacks (ill-formed IR). The
    reduced case is the slice alone; repro.py reproduces in a fresh process."""
    import os
    import subprocess
    import sys

    from reducer.api import reduce_case

    generated, _ = _slice_programs()
    # FoldConstant folds dataflow blocks: a case whose slice is in one
    p = next(q for q in generated if any(b.dataflow and any(n.op == "dyn_slice" for n in b.nodes)
                                         for f in q.functions for b in f.blocks)).copy()
    p.meta["variants"] = [{"target": {"kind": "llvm"}, "pipeline": "passes",
                           "passes": ["FoldConstant"], "exec_mode": "bytecode"}]
    red = reduce_case(p, out_dir=tmp_path / "r")
    assert "FoldConstant" in red.signature and "shape_func" in red.signature, red.signature
    ops = [n.op for f in red.reduced.functions for n in f.nodes()]
    assert "dyn_slice" in ops and not any(op.startswith("relax.") for op in ops), ops
    assert red.outcome.reproduction == {"reproduced": 3, "replays": 3}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "repro.py"], cwd=tmp_path / "r", env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "BUG REPRODUCED" in r.stdout, r.stdout + r.stderr


def test_the_exporters_refuse_a_slice_by_name():
    """ONNX and PyTorch cases have no form for dyn_slice: a one-line refusal naming it."""
    from fuzz import onnx_export, torch_export
    from fuzz.generate import slice_alone

    p = slice_alone(1)
    assert onnx_export.exportable(p) == "dyn_slice has no ONNX form here"
    assert torch_export.exportable(p) == "dyn_slice has no torch form here"


def test_builder_source_of_a_slice_constructs_what_materialize_does():
    """repro.py's builder (fuzz.materialize.builder_source) of dyn_slice cases."""
    import tvm

    from fuzz.materialize import builder_source, materialize

    generated, alone = _slice_programs()
    for p in alone[:6] + generated[:4]:
        scope: dict = {}
        exec(builder_source(p), scope)
        tvm.ir.assert_structural_equal(materialize(p), scope["build_module"](),
                                       map_free_vars=True)


def test_control_flow_cases_round_trip_as_json_and_retype(cf_programs):
    for p in cf_programs[:40]:
        q = Program.loads(p.dumps())
        assert q.dumps() == p.dumps()
        retype(q, strict=True)   # every branch and loop types as the generator typed it
        assert q.dumps() == p.dumps()


def test_materialized_if_and_loop_are_well_formed(cf_programs):
    import tvm
    from tvm import relax

    from fuzz.calltir import func_name
    from fuzz.materialize import InferenceMismatch, materialize

    with_loop = [p for p in cf_programs if _loops(p)][:3]
    checked = 0
    for p in cf_programs[:8] + with_loop:
        try:
            mod = materialize(p, check_types=True)
        except InferenceMismatch:   # an op's known shape bug (arange, negative step): not ours
            continue
        checked += 1
        assert relax.analysis.well_formed(mod) is not False
        text = mod.script()
        assert "if " in text and "else:" in text
        for loop in _loops(p):   # the recursive function calls itself
            body = text.split(f"def {loop.name}(", 1)[1].split("@R.function", 1)[0]
            assert f"cls.{loop.name}(" in body
        assert {gv.name_hint for gv in mod.get_global_vars()} == {
            f.name for f in p.functions if f.kind == "func"} | {   # and call_tir's PrimFuncs
            func_name(n) for f in p.functions for n in f.nodes() if n.op == "call_tir"}
    assert checked >= 6 and any(_loops(p) for p in with_loop), checked
    del tvm


def test_reference_runs_the_branch_taken():
    from fuzz import reference
    from fuzz.inputs import make_inputs

    p = next(p for p in (generate(s) for s in SEEDS) if any(
        n.op == "if" and n.args[0] in {q.name for q in p.main.params} for n in p.main.nodes()))
    n = next(n for n in p.main.nodes() if n.op == "if" and n.args[0] in
             {q.name for q in p.main.params})
    env, args = make_inputs(p, 0)
    i = [q.name for q in p.main.params].index(n.args[0])
    outs = []
    for c in (True, False):
        args[i] = np.array(c)
        outs.append(reference.flatten(reference.run(p, list(args), dict(env))))
    assert all(o is not None for o in outs)


def test_tvm_agrees_with_numpy_on_control_flow_cases(cf_programs):
    """The judge's verdict on control-flow cases: built, run and compared with numpy. A
    failure here is either a listed TVM bug or tvmfuzz's defect: never ``invalid``."""
    from fuzz.catalogue.known_bugs import explain
    from fuzz.signature import bug_key

    progs = [p.copy() for p in cf_programs[:16]]
    for p in progs:
        p.meta["variants"] = None
    outs = _run_all(progs)
    verdicts = collections.Counter()
    for p, o in zip(progs, outs):
        verdicts[o.verdict] += 1
        assert o.verdict != "invalid", (p.meta["seed"], o.signature)
        if o.verdict == "fail":
            # TVM bugs met by control flow (StaticPlanBlockMemory leaves a storage var
            # undefined across R.If branches) or known op bugs
            # (or BF16StorageLegalize's BufferStore dtype check on a bfloat16 program: a
            # real TVM bug met without control flow too, bug aed28409797b)
            # (or, through a call_tir to a generated PrimFunc, the printer's elem_offset bug
            # that TIR cases meet too, bug 8222c8f24c36)
            # (or the printer's module-level TypeVar("m") for a private function's dim m,
            # which clashes with another function's own m = T.int64(): a loop function over
            # a value of match_cast dims, seed 76 of generator v4, reduced to 2 functions)
            assert (o.kind == "pass_ill_formed" and "StaticPlanBlockMemory" in o.message) \
                or explain(p, o) or "BF16StorageLegalize" in o.signature \
                or bug_key(o) == "roundtrip | roundtrip | the printed text loses or changes " \
                                 "elem_offset" \
                or "Cannot redefine a non-PrimType object to a PrimType" in o.message, \
                (p.meta["seed"], o.signature)
    # StaticPlanBlockMemory's bug is met by most cases with a branch (measured: 14 of 16):
    # some still pass end to end, agreeing with numpy on the branch taken
    assert verdicts["pass"] >= 1, verdicts


def test_random_near_valid_generation_reaches_17348_and_calls_it_known():
    """A main holding an R.If, declared to return a type its body does not give (the
    wrong_ret mutation), crashes the VM at run time on 0.27: apache/tvm#17348, found by
    random generation, reported as known."""

    progs = []
    for s in range(600):
        p = generate(s, mode="near-valid")
        if "wrong_ret" in p.meta.get("mutations", []):
            p.meta["variants"] = None
            progs.append(p)
        if len(progs) >= 32:
            break
    assert progs
    outs = _run_all(progs)
    hits = [(p, o) for p, o in zip(progs, outs)
            if o.kind == "signal" and o.stage == "run"]
    assert hits, collections.Counter((o.verdict, o.kind) for o in outs)
    for p, o in hits:
        status, why = auto_status(p, o)
        assert status == KNOWN and "17348" in why, (p.meta["seed"], why)


def test_model_passes_handle_control_flow(cf_programs):
    from reducer.passes import registry
    from reducer.passes.model.context import ModelContext
    from reducer.passes.model.if_to_branch import IfToBranch

    names = {"remove_nodes", "inline_calls", "remove_functions", "shrink_dims",
             "if_to_branch", "remove_dead", "simplify_blocks"}
    flattened = 0
    for p in cf_programs[:12]:
        ctx = ModelContext.of(p)
        for ps in registry.passes("model", ctx):
            if ps.name not in names:
                continue
            n = len(ps._targets(p))
            for i in range(min(n, 6)):
                cand = ps.apply(p, frozenset([i]))   # None (refused) or a retyped program
                if cand is not None:
                    retype(cand.copy())
        one = IfToBranch(ctx)
        ts = one._targets(p)
        cand = None
        for i in range(len(ts)):
            cand = one.apply(p, frozenset([i]))
            if cand is not None:
                break
        if cand is not None:
            flattened += 1
            n_if = sum(n.op == "if" for f in p.functions for n in f.nodes())
            assert sum(n.op == "if" for f in cand.functions for n in f.nodes()) < n_if
            assert len(cand.functions) < len(p.functions)
    assert flattened >= 5


@pytest.mark.slow
def test_reducer_shrinks_a_control_flow_finding(tmp_path):
    from reducer.api import reduce_case
    from worker.sandbox_runner import SandboxRunner

    runner = SandboxRunner(timeout=120)
    found = None
    try:
        cands = [p for p in (generate(s) for s in range(200)) if _has_if(p)][:24]
        for p in cands:
            p.meta["variants"] = None
        for p, o in zip(cands, runner.run_many(cands)):
            if o.kind == "pass_ill_formed" and "StaticPlanBlockMemory" in o.message:
                found = (p, o)
                break
    finally:
        runner.close()
    if found is None:
        pytest.skip("no StaticPlanBlockMemory finding among these seeds")
    p, o = found
    red = reduce_case(p, out_dir=tmp_path / "r", time_budget=240)
    assert red.signature == o.signature
    assert sum(len(list(f.nodes())) for f in red.reduced.functions) < sum(
        len(list(f.nodes())) for f in p.functions)


def test_a_crash_after_a_pass_broke_the_ir_is_that_passs_bug():
    """A near-valid mutant (a shape erased) with an R.If: StaticPlanBlockMemory leaves a Var
    undefined, and the build then stops at CodeGenVM's refusal of the unlowered gather_nd.
    The finding is what the pass broke, one bug with the same break where the build goes on
    (campaign seed 149 filed it as a second bug under CodeGenVM's message); the crash is kept
    beside it."""
    import json
    from pathlib import Path

    from fuzz.outcome import Outcome
    from fuzz.signature import bug_id
    from worker.execute import compile_and_run

    data = Path(__file__).parent / "data" / "relax_if_static_plan_then_codegen.json"
    o = compile_and_run(Program.from_json(json.loads(data.read_text())))
    if o.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    assert (o.kind, o.extra["failing_pass"]) == ("pass_ill_formed", "StaticPlanBlockMemory")
    assert o.message.startswith("StaticPlanBlockMemory produced ill-formed IR: Var")
    assert "CodeGenVM cannot emit" in o.extra["then"]
    went_on = Outcome("fail", "pass_ill_formed", "build", "",
                      "StaticPlanBlockMemory produced ill-formed IR: Var lv3 is not defined.",
                      extra={"failing_pass": "StaticPlanBlockMemory"})
    assert bug_id(o) == bug_id(went_on)
    # the storage allocated in the then branch and used after the If: apache/tvm#20191
    prog = Program.from_json(json.loads(data.read_text()))
    status, why = auto_status(prog, o)
    assert status == KNOWN and "20191" in why, why


def test_a_loop_s_invariant_input_never_names_dims_its_caller_defines_in_its_body():
    """The caller's argument for a loop invariant whose type names symbolic dims defined in the
    caller's body (a match_cast, a shape expression like ``d5 - 1 + 1``) is a value in scope,
    never a new input of that type: such an input uses the dims before anything defines them
    (seen in a guided campaign: ``main(p75: R.Tensor((d5 - 1 + 1, 1, 1)))``, a well_formed
    crash filed as a bug)."""
    from fuzz import control as C
    from fuzz.catalogue.spec import Value
    from fuzz.choice import RandomChooser
    from fuzz.generate import GenContext, _op_table
    from fuzz.model import TensorTy

    specs, cum = _op_table(None)
    made = 0
    for seed in range(60):
        ctx = GenContext(RandomChooser(seed), "valid")
        # a computed value whose shape uses d5, which this function defines in its body
        ctx.pool.append(Value("v1", TensorTy(["d5 - 1 + 1", 3], "float32"), -1.0, 1.0, True))
        if not C.gen_loop(ctx, specs, cum, []):
            continue
        made += 1
        for p in ctx.params:
            assert all(isinstance(d, int) for d in p.ty.shape or []), (seed, p)
    assert made >= 20, made
