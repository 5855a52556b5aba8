"""ONNX cases: the exporter (fuzz/onnx_export.py) against onnx's checker, onnxruntime and the
numpy reference; the onnx case kind's judge (worker/onnx_judge.py) on the real TVM importer;
campaigns that mix ONNX cases. Real onnx, onnxruntime and TVM; skipped without onnx."""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from fuzz import reference  # noqa: E402
from fuzz.generate import generate  # noqa: E402
from fuzz.inputs import make_inputs  # noqa: E402
from fuzz.model import (Block, Function, Node, OnnxProgram, Param, Program,  # noqa: E402
                        TensorTy, TupleTy)
from fuzz.onnx_export import (EXPORTABLE_OPS, OPSETS, NotExportable, OnnxOptions,  # noqa: E402
                              export, feeds)
from worker import cases  # noqa: E402
from worker.campaign import case_ir, make_case, run_campaign  # noqa: E402
from worker.onnx_judge import onnxruntime_outputs  # noqa: E402


def _one(nodes, params, ret, seed=0) -> Program:
    return Program([Function("main", params, [Block(True, nodes)], ret)], "main",
                   {"mode": "valid", "seed": seed})


def test_exported_models_pass_the_checker_and_agree_with_numpy():
    """Every exported model passes onnx.checker (full check: shape inference agrees with the
    declared output types, the catalogue's shape rules); onnxruntime runs it, or refuses only
    for want of a kernel for a dtype; its outputs agree with the numpy reference."""
    tally = collections.Counter()
    for seed in range(240):
        prog = generate(seed, ops=EXPORTABLE_OPS)
        opts = OnnxOptions(opset=OPSETS[seed % 3], weights=seed % 2 == 0)
        env, arrays = make_inputs(prog, seed)
        try:
            model = export(prog, opts, arrays)
        except NotExportable:
            tally["not exportable"] += 1
            continue
        onnx.checker.check_model(model, full_check=True)
        try:
            out = onnxruntime_outputs(model, feeds(prog, opts, arrays))
        except Exception as e:  # noqa: BLE001
            assert "NOT_IMPLEMENTED" in str(e), (seed, str(e)[:300])
            tally["no kernel"] += 1
            continue
        expected = reference.flatten(reference.run(prog, arrays, env))
        assert reference.compare(prog, expected, out) is None, (seed, prog.ops())
        tally["agree"] += 1
    assert tally["agree"] >= 60, tally


def test_attributes_move_to_inputs_with_the_opset():
    x = TensorTy([2, 1, 3], "float32")
    nodes = [Node("v1", "relax.squeeze", ["a"], {"axis": [1]}, TensorTy([2, 3], "float32")),
             Node("v2", "relax.sum", ["v1"], {"axis": [0], "keepdims": False},
                  TensorTy([3], "float32")),
             Node("v3", "relax.max", ["v1"], {"axis": [1], "keepdims": True},
                  TensorTy([2, 1], "float32")),
             Node("v4", "relax.clip", ["v2"], {"min": -1, "max": 1}, TensorTy([3], "float32")),
             Node("v5", "tuple", ["v4", "v3"], {}, TupleTy([TensorTy([3], "float32"),
                                                             TensorTy([2, 1], "float32")]))]
    prog = _one(nodes, [Param("a", x)], "v5")
    forms = {}
    for opset in OPSETS:
        model = export(prog, OnnxOptions(opset=opset))
        onnx.checker.check_model(model, full_check=True)
        forms[opset] = {n.op_type: (len(n.input), sorted(a.name for a in n.attribute))
                        for n in model.graph.node}
        _, arrays = make_inputs(prog, 1)
        got = onnxruntime_outputs(model, feeds(prog, OnnxOptions(opset=opset), arrays))
        assert np.allclose(got[0], np.clip(arrays[0][:, 0].sum(0), -1, 1), atol=1e-6)
    assert forms[11]["Squeeze"] == (1, ["axes"]) and forms[18]["Squeeze"] == (2, [])
    assert forms[11]["ReduceSum"] == (1, ["axes", "keepdims"])
    assert forms[18]["ReduceSum"] == (2, ["keepdims"])
    assert forms[11]["ReduceMax"] == (1, ["axes", "keepdims"])   # moved at 18, not 13
    assert forms[18]["ReduceMax"] == (2, ["keepdims"])
    assert forms[11]["Clip"] == (3, []) == forms[23]["Clip"]


def test_symbolic_reshape_computes_its_shape_in_the_graph():
    x = TensorTy(["n", 3], "float32")
    nodes = [Node("v1", "relax.reshape", ["a"], {"shape": ["n * 3"]},
                  TensorTy(["n * 3"], "float32"))]
    prog = _one(nodes, [Param("a", x)], "v1")
    model = export(prog, OnnxOptions(opset=18))
    onnx.checker.check_model(model, full_check=True)
    # Shape -> Gather -> Mul -> Concat -> Reshape: the target shape computed at run time
    assert [n.op_type for n in model.graph.node] == ["Shape", "Gather", "Mul", "Concat",
                                                     "Reshape"]
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.array_equal(onnxruntime_outputs(model, {"a": a})[0], a.ravel())


def _judge(prog: Program, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cases.judge(cases.job(OnnxProgram.of(prog, options)))


def _small_valid() -> Program:
    x, w = TensorTy([2, 3], "float32"), TensorTy([3, 4], "float32")
    y = TensorTy([2, 4], "float32")
    nodes = [Node("v1", "relax.matmul", ["a", "b"], {"out_dtype": None}, y),
             Node("v2", "relax.nn.relu", ["v1"], {}, y),
             Node("v3", "relax.sum", ["v2"], {"axis": [1], "keepdims": True},
                  TensorTy([2, 1], "float32"))]
    return _one(nodes, [Param("a", x), Param("b", w)], "v3")


@pytest.mark.parametrize("options", [
    {"opset": 11}, {"opset": 18, "weights": True, "keep_params_in_input": True},
    {"opset": 23, "dynamic": True}, {"opset": 23, "dynamic": True, "shape_dict": True}])
def test_a_valid_onnx_case_passes(options):
    o = _judge(_small_valid(), **options)
    assert o.verdict == "pass", o.to_json()
    assert o.extra["onnx"]["opset"] == options["opset"]


def test_an_importer_exception_is_a_finding_at_stage_import(monkeypatch):
    import worker.onnx_judge as J

    def broken(*a, **k):
        raise ValueError("converter gave up")

    monkeypatch.setattr(J, "import_model", broken)
    o = _judge(_small_valid(), opset=18)
    assert (o.verdict, o.kind, o.stage) == ("fail", "crash", "import")
    assert o.signature.startswith("crash | import | ValueError | converter gave up")


def test_a_real_importer_error_names_its_converter():
    """TVM 0.27's EyeLike converter refuses a dtype attribute other than the input's, which
    ONNX allows (onnxruntime runs it)."""
    x = TensorTy([3, 3], "int64")
    nodes = [Node("v1", "relax.eye_like", ["a"], {"k": 0, "dtype": "float32"},
                  TensorTy([3, 3], "float32"))]
    o = _judge(_one(nodes, [Param("a", x, 0, 4)], "v1"), opset=18)
    assert (o.verdict, o.stage) == ("fail", "import"), o.to_json()
    assert o.extra.get("converter") == "EyeLike._impl_v9"
    assert o.signature.endswith("[converter EyeLike._impl_v9]")


def test_a_declared_output_type_onnxruntime_contradicts_is_shape_inference():
    """OneHot with float32 values: TVM 0.27's import declares float64 (bug class 2's oracle,
    applied at import)."""
    nodes = [Node("v1", "relax.one_hot", ["a"], {"axis": 1, "depth": 1, "dtype": "float32",
                                                 "off_value": -1.0, "on_value": 2.5},
                  TensorTy([3, 1], "float32"))]
    o = _judge(_one(nodes, [Param("a", TensorTy([3], "int64"), 0, 0)], "v1"), opset=18)
    assert (o.verdict, o.kind, o.stage) == ("fail", "shape_inference", "import"), o.to_json()


def _judge_pinned(name: str):
    """A pinned campaign case (tests/data/NAME) judged; skipped where the TVM under test
    passes it (fixed there)."""
    from pathlib import Path

    from worker.replay import load_job

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        o = cases.judge(load_job(Path(__file__).parent / "data" / name))
    if o.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    return o


def test_a_slice_past_the_end_declared_negative_at_import_is_the_known_strided_slice_bug():
    """Campaign case (seed 900399), reduced and pinned
    (tests/data/onnx_slice_past_end_negative_dim.json): an ONNX Slice with a negative step
    whose begin clamps past its end. onnxruntime gives the empty slice; the import declares
    extent -1, which relax.strided_slice's inference makes: the known entry's bug (numpy's
    empty slice, TVM's negative extent), met at import. It came back as a new bug."""
    from pathlib import Path

    from fuzz.triage import KNOWN, auto_status

    o = _judge_pinned("onnx_slice_past_end_negative_dim.json")
    assert (o.kind, o.stage, o.extra.get("negative_dim_op")) == \
        ("shape_inference", "import", "relax.strided_slice"), o.to_json()
    prog = Program.loads((Path(__file__).parent / "data" /
                          "onnx_slice_past_end_negative_dim.json").read_text())
    status, why = auto_status(prog, o)
    assert status == KNOWN and "begin past end after clamping" in why, why
    # Only the op that made the negative dim is asked: the same finding put on another op
    # of the model is no known bug of that op.
    other = o.to_json()
    other["extra"] = dict(other["extra"], negative_dim_op="relax.reshape")
    assert auto_status(prog, other)[0] != KNOWN


def test_an_import_crash_on_a_wrong_declared_dtype_is_that_dtype_finding_s_bug():
    """Campaign case, pinned (tests/data/onnx_one_hot_f64_then_multiply.json): OneHot with
    float32 values, which TVM 0.27's import declares float64 (relax.one_hot), times a float32
    input: Mul's converter crashes on float32 x float64. It was filed as Mul's bug beside
    OneHot's dtype finding; the crash now names the op that declared the wrong dtype (the
    model truncated before the Mul, its declared types against onnxruntime's), so both are
    one bug."""
    from fuzz.signature import bug_id, bug_key

    crash = _judge_pinned("onnx_one_hot_f64_then_multiply.json")
    assert (crash.verdict, crash.kind, crash.stage) == ("fail", "crash", "import"), \
        crash.to_json()
    assert crash.extra["converter"] == "Mul._impl_v7"
    assert crash.extra.get("dtype_op") == "relax.one_hot", crash.to_json()
    nodes = [Node("v1", "relax.one_hot", ["a"], {"axis": 1, "depth": 1, "dtype": "float32",
                                                 "off_value": -1.0, "on_value": 2.5},
                  TensorTy([3, 1], "float32"))]
    finding = _judge(_one(nodes, [Param("a", TensorTy([3], "int64"), 0, 0)], "v1"), opset=18)
    assert (finding.kind, finding.extra.get("dtype_op")) == ("shape_inference", "relax.one_hot")
    assert bug_id(crash) == bug_id(finding)
    assert bug_key(crash) == "shape_inference | import | declared dtype changed by relax.one_hot"


def test_a_mixed_dtype_import_crash_no_converter_declared_keeps_its_own_bug():
    """Campaign case, pinned: ONNX Selu of a float16 input; its converter subtracts the input
    from a float32 constant and crashes. No earlier op declared a wrong dtype (Selu reads the
    graph's input): the crash stays Selu's converter's bug."""
    from fuzz.signature import bug_key

    crash = _judge_pinned("onnx_selu_f16_const.json")
    assert (crash.kind, crash.stage) == ("crash", "import"), crash.to_json()
    assert "dtype_op" not in crash.extra
    assert bug_key(crash).endswith("[converter Selu._impl_v1]")


def test_a_model_onnxruntime_rejects_is_invalid(monkeypatch):
    """onnxruntime has no float64 Erf kernel (valid ONNX): the exporter leaves that form out;
    written anyway, the model is onnxruntime's refusal, not a finding."""
    from fuzz.onnx_export import EXPORTERS, FL

    monkeypatch.setattr(EXPORTERS["relax.erf"], "dtypes", FL)
    t = TensorTy([3, 4], "float64")
    o = _judge(_one([Node("v1", "relax.erf", ["a"], {}, t)], [Param("a", t)], "v1"), opset=18)
    assert (o.verdict, o.kind, o.stage) == ("invalid", "onnx_rejected", "onnxruntime")


def test_a_case_with_an_op_onnx_lacks_is_not_exportable():
    t = TensorTy([3], "float32")
    o = _judge(_one([Node("v1", "relax.atan2", ["a", "a"], {}, t)], [Param("a", t)], "v1"))
    assert (o.verdict, o.kind) == ("invalid", "not_exportable")


def test_onnx_cases_travel_as_json_and_mix_into_campaigns():
    irs = [case_ir(s, ("relax", "tir", "onnx")) for s in range(600)]
    assert irs == [case_ir(s, ("relax", "tir", "onnx")) for s in range(600)]
    assert 0.15 < irs.count("onnx") / 600 < 0.35 and 0.25 < irs.count("tir") / 600 < 0.45
    # Adding onnx leaves the TIR cases of relax,tir campaigns where they were.
    assert [s for s in range(600) if case_ir(s, ("relax", "tir")) == "tir"] == \
        [s for s in range(600) if irs[s] == "tir"]
    prog = make_case(5, None, ir=("onnx",))
    again = Program.loads(prog.dumps())
    assert again.ir == "onnx" and again.dumps() == prog.dumps()
    assert again.meta["onnx"]["opset"] in OPSETS and cases.kind_of(again).name == "onnx"
    assert cases.kind_of_job(cases.job(again)).name == "onnx"


def test_a_short_onnx_campaign(tmp_path):
    (tmp_path / "c").mkdir()
    summary = run_campaign(8, tmp_path / "c", seed=2000, echo=lambda s: None, replays=1,
                           ir=("onnx",), reduce=None, corpus=tmp_path / "corpus")
    assert summary["cases_by_ir"].get("onnx", 0) == summary["cases"] > 0
    assert summary["verdicts"].get("pass", 0) > 0


def test_exposed_values_are_graph_outputs_checked_at_import():
    from fuzz.onnx_export import expose_values

    prog = expose_values(_small_valid())
    assert prog.meta["exposed"] == 2 and len(reference.output_nodes(prog)) == 3
    model = export(prog, OnnxOptions(opset=18))
    assert len(model.graph.output) == 3
    o = _judge(prog, opset=18)
    assert o.verdict == "pass", o.to_json()


def _reshape_then_expand() -> Program:
    x = TensorTy([2, 3], "float32")
    return _one([Node("v1", "relax.reshape", ["a"], {"shape": [3, 2]},
                      TensorTy([3, 2], "float32")),
                 Node("v2", "relax.broadcast_to", ["v1"], {"shape": [2, 3, 2]},
                      TensorTy([2, 3, 2], "float32"))], [Param("a", x)], "v2")


def test_shape_ops_compute_static_shapes_in_the_graph():
    prog = _reshape_then_expand()
    for scalar in (False, True):
        opts = OnnxOptions(opset=18, shape_ops=True, scalar_gather=scalar)
        model = export(prog, opts)
        onnx.checker.check_model(model, full_check=True)
        ops = [n.op_type for n in model.graph.node]
        assert ops.count("Shape") >= 2 and "Concat" in ops
        assert ("Unsqueeze" in ops) == scalar
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        got = onnxruntime_outputs(model, {"a": a})[0]
        assert np.array_equal(got, np.broadcast_to(a.reshape(3, 2), (2, 3, 2)))


def test_tvm_imports_the_pytorch_shape_pattern_but_not_a_gather_of_a_1d_index():
    """Shape -> Gather(scalar) -> Unsqueeze -> Concat -> Reshape (PyTorch's export) imports
    on TVM 0.27, also with the data input's dims symbolic; Shape -> Gather([i]) -> Concat,
    equally valid ONNX, does not (Reshape's converter wants a Relax shape)."""
    prog = _reshape_then_expand()
    assert _judge(prog, opset=18, shape_ops=True, scalar_gather=True).verdict == "pass"
    assert _judge(prog, opset=11, shape_ops=True, scalar_gather=True,
                  dynamic=True).verdict == "pass"
    o = _judge(prog, opset=18, shape_ops=True)
    assert (o.verdict, o.stage) == ("fail", "import")
    assert o.extra.get("converter") == "Reshape._impl_v13"


def _repro_exit(tmp_path, prog: Program, outcome) -> tuple:
    """repro.py of an ONNX finding, run alone in a fresh interpreter (no tvmfuzz on the path)."""
    import os
    import subprocess
    import sys

    from reducer.repro import onnx_repro_text

    path = tmp_path / "repro.py"
    path.write_text(onnx_repro_text(prog, outcome))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


def test_onnx_repro_builds_the_model_and_reproduces_import_findings(tmp_path):
    """repro.py builds the model with onnx.helper, runs onnxruntime, imports it: an import
    error and a wrong declared type reproduce (exit 1); a passing case exits 0."""
    eye = _one([Node("v1", "relax.eye_like", ["a"], {"k": 0, "dtype": "float32"},
                     TensorTy([3, 3], "float32"))], [Param("a", TensorTy([3, 3], "int64"), 0, 4)],
               "v1")
    hot = _one([Node("v1", "relax.one_hot", ["a"], {"axis": 1, "depth": 1, "dtype": "float32",
                                                    "off_value": -1.0, "on_value": 2.5},
                     TensorTy([3, 1], "float32"))], [Param("a", TensorTy([3], "int64"), 0, 0)],
               "v1")
    for prog in (eye, hot):
        case = OnnxProgram.of(prog, {"opset": 18, "weights": False})
        o = _judge(case, opset=18)
        assert o.verdict == "fail"
        code, out = _repro_exit(tmp_path, case, o)
        assert code == 1 and "BUG REPRODUCED" in out, out[-2000:]
    ok = OnnxProgram.of(_small_valid(), {"opset": 23, "weights": True,
                                         "keep_params_in_input": True})
    o = _judge(ok, opset=23, weights=True, keep_params_in_input=True)
    code, out = _repro_exit(tmp_path, ok, o)
    assert code == 0 and "no failure" in out, out[-2000:]


def test_model_source_keeps_the_dims_a_model_leaves_unknown():
    """Reduced campaign case 81953f754e5f: remove_nodes put inputs r1 [1, m + 4] and r2
    [m + 4] in place of a pad and a sum. The export declares a dim expression as an unknown
    dim (neither value nor name); model_source wrote it as dim_value 0, so repro.py's model
    refused r2's 9 elements and repro.py exited 2 ("the reproducer itself broke"). The model
    model_source writes declares the exported model's inputs and outputs, and onnxruntime
    runs it on the case's inputs."""
    import json
    from pathlib import Path

    from fuzz.onnx_export import model_source

    case = Path(__file__).parent / "data" / "onnx_dim_expression_inputs.json"
    prog = Program.from_json(json.loads(case.read_text()))
    opts = OnnxOptions.from_json(prog.meta["onnx"])
    _, arrays = make_inputs(prog, prog.meta["seed"])
    model = export(prog, opts, arrays)
    r2 = [i for i in model.graph.input if i.name == "r2"][0]
    assert r2.type.tensor_type.shape.dim[0].WhichOneof("value") is None
    scope = {}
    exec(model_source(model), scope)   # noqa: S102 - the source tvmfuzz writes into repro.py
    built = scope["build_model"]()
    assert list(built.graph.input) == list(model.graph.input)
    assert list(built.graph.output) == list(model.graph.output)
    onnx.checker.check_model(built, full_check=True)
    sess = ort.InferenceSession(built.SerializeToString(), providers=["CPUExecutionProvider"])
    [out] = sess.run(None, feeds(prog, opts, arrays))
    assert np.array_equal(out, arrays[2])


def test_onnx_options_from_outside_are_checked():
    from worker.user_input import case_problem

    prog = make_case(7, None, ir=("onnx",))
    assert case_problem(prog) is None
    prog.meta["onnx"]["opset"] = 99
    assert "opset" in case_problem(prog)
    prog.meta["onnx"] = {"opset": 18, "weights": "yes"}
    assert "booleans" in case_problem(prog)
    prog.meta["onnx"] = {"opset": 18, "module": "os"}
    assert "unknown fields" in case_problem(prog)


def test_a_node_the_importer_refuses_before_its_converter_is_named():
    """take(mode="wrap") is Mod(index, the axis' dim); with the dim computed as PyTorch writes
    it (Shape -> Gather(scalar) -> Unsqueeze), TVM 0.27's importer holds it as a ShapeExpr and
    refuses Mod before its converter runs: the signature still names Mod's converter."""
    prog = _one([Node("v1", "relax.take", ["a", "b"], {"axis": 0, "mode": "wrap"},
                      TensorTy([3], "float32"))],
                [Param("a", TensorTy([2, 3], "float32")), Param("b", TensorTy([], "int32"), -5, 5)],
                "v1")
    assert _judge(prog, opset=18).verdict == "pass"
    o = _judge(prog, opset=18, shape_ops=True, scalar_gather=True)
    assert (o.verdict, o.stage) == ("fail", "import")
    assert o.signature.endswith("[converter Mod._impl_v10]"), o.signature


def test_an_export_onnxruntime_disagrees_with_numpy_on_is_invalid(monkeypatch):
    """Where onnxruntime's outputs are not numpy's (an exporter that wrote another
    semantics), the case is invalid before TVM is compared with anything."""
    from fuzz.onnx_export import EXPORTERS, _simple

    monkeypatch.setitem(EXPORTERS, "relax.exp", _simple("Neg"))
    t = TensorTy([3], "float32")
    o = _judge(_one([Node("v1", "relax.exp", ["a"], {}, t)], [Param("a", t)], "v1"), opset=18)
    assert (o.verdict, o.kind, o.stage) == ("invalid", "onnx_disagrees", "onnxruntime")


def test_a_scheduled_onnx_finding_reproduces_with_its_schedule(tmp_path):
    """Campaign seed 110000 (ed5eca79825c): an ONNX case built by a Relax `scheduled` variant
    meets loop_partition's multiply-defined variable. Its repro.py had no schedule to replay
    ("no trace was taken": the trace job materialized the program model, not the module TVM
    imported). The trace is now taken on the imported module and repro.py reproduces."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from tvmfuzz.cli import main

    case = Path(__file__).parent / "data" / "onnx_scheduled_loop_partition.json"
    prog = Program.from_json(json.loads(case.read_text()))
    assert any(v.get("pipeline") == "scheduled" for v in prog.meta["variants"])
    assert main(["report", str(case), "--out", str(tmp_path / "r"), "--no-bisect",
                 "--no-jail"]) == 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, str(tmp_path / "r" / "repro.py")], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "loop_partition" in r.stdout


def test_converters_sharing_an_inherited_method_are_one_bug():
    """The 0.25 campaign (seed 250000) filed Max._impl_v1 and Min._impl_v1 failing alike on a
    constant input as two bugs: both run MultiInputBase._impl_v1. The signature keeps the
    converter the node named; the bug key takes the method's defining class."""
    from fuzz.signature import bug_key, signature
    from tvm.relax.frontend.onnx.onnx_frontend import Max
    from worker.frontend import import_crash
    from worker.onnx_judge import converter_frame

    try:
        Max._impl_v1(None, None, {}, {})   # raises inside the inherited method's frame
    except Exception as e:  # noqa: BLE001
        raised = e
    name, root = converter_frame(raised)
    assert name == "Max._impl_v1" and root.endswith("._impl_v1") and root != name
    o = import_crash(raised, converter_frame)
    assert o.extra == {"converter": "Max._impl_v1", "converter_root": root}
    mn = {**o.to_json(), "extra": {"converter": "Min._impl_v1", "converter_root": root}}
    assert bug_key(o) == bug_key(mn) and signature(o) != signature(mn)
    # a converter's own method: one name, as before
    own = {**o.to_json(), "extra": {"converter": "Squeeze._impl_v13"}}
    assert bug_key(own) != bug_key(o)


def test_a_declared_dtype_is_keyed_by_the_op_that_changed_it():
    """Campaigns filed the PyTorch importer's matmul (out_dtype fixed to float32) three times,
    once per operand dtype (float16, bfloat16, float64): the key names the op instead."""
    from tvm import relax
    from tvm.script import ir as I
    from tvm.script import relax as R

    from fuzz.signature import bug_key
    from worker.frontend import dtype_changer, type_finding

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((2, 2), "float64"), y: R.Tensor((2, 2), "float64")):
            with R.dataflow():
                a = R.astype(x, "float32")            # an explicit cast is not the culprit
                m = R.matmul(x, y, out_dtype="float32")
                s = R.add(m, a)
                R.output(s)
            return s

    assert isinstance(Mod["main"], relax.Function) and dtype_changer(Mod) == "relax.matmul"
    keys = {bug_key(type_finding(Mod, f"output 0: declared dtype float32, eager PyTorch gives "
                                      f"{d}")) for d in ("float16", "bfloat16", "float64")}
    assert keys == {"shape_inference | import | declared dtype changed by relax.matmul"}
    # a shape problem, or a module where no op changed a dtype, keeps its message
    assert "dtype_op" not in type_finding(Mod, "output 0: declared rank 1, x gives (2, 2)").extra


def test_a_negative_declared_dim_is_keyed_by_the_op_that_declared_it():
    """The 0.25 ONNX campaign (Slice) and the guidance bench (PyTorch slice) both met
    strided_slice declaring a negative extent, as two shape messages: one key names the op."""
    from tvm.script import ir as I
    from tvm.script import relax as R

    from fuzz.signature import bug_key
    from worker.frontend import negative_dim_maker, type_finding

    @I.ir_module
    class Mod:
        @R.function
        def main(x: R.Tensor((5,), "float32")):
            with R.dataflow():
                s = R.strided_slice(x, (0,), (-3,), (-6,), (2,), assume_inbound=False)
                R.output(s)
            return s

    if negative_dim_maker(Mod) is None:
        pytest.skip("strided_slice's inference gives no negative extent in the TVM under test")
    assert negative_dim_maker(Mod) == "relax.strided_slice"
    a = type_finding(Mod, "output 0: declared shape ['T.int64(-1)'], eager PyTorch gives [0]")
    b = type_finding(Mod, "output 3: declared shape ['T.int64(1)', 'T.int64(-2)'], "
                          "onnxruntime gives [1, 0]")
    assert bug_key(a) == bug_key(b) == ("shape_inference | import | negative dim declared by "
                                        "relax.strided_slice")


def _argmax_of_zeros_then_add() -> Program:
    """argmax of uint8 zeros (TVM returns -1 where every element is the dtype's minimum: a
    known defect, fuzz.catalogue.known_bugs) carried to the output by an add."""
    a, b = TensorTy([2, 3], "uint8"), TensorTy([2, 1], "int64")
    nodes = [Node("v1", "relax.argmax", ["a"], {"axis": 1, "keepdims": True}, b),
             Node("v2", "relax.add", ["v1", "b"], {}, b)]
    return _one(nodes, [Param("a", a, 0, 0), Param("b", b)], "v2")


def test_a_frontend_numeric_finding_is_named_by_its_first_wrong_op():
    """The probe of an ONNX case goes the case's way (exported, onnxruntime, from_onnx with
    the case's options): the imported argmax is wrong, the add after it only carries it, so
    the finding is argmax's, whichever op makes the output."""
    from fuzz.signature import bug_key

    for options in ({"opset": 23}, {"opset": 18, "weights": True, "keep_params_in_input": True}):
        o = _judge(_argmax_of_zeros_then_add(), **options)
        if o.verdict == "pass":
            pytest.skip("argmax of uint8 zeros is fixed in the TVM under test")
        assert (o.verdict, o.kind) == ("fail", "numeric"), o.to_json()
        assert o.extra["numeric_key"] == "relax.argmax:int64", o.to_json()
        assert o.extra["output_op"] == "relax.add:int64"
        assert bug_key(o) == "numeric | compare | relax.argmax"   # a frontend key: no dtype


def test_a_probe_whose_frontend_reference_disagrees_with_numpy_names_nothing(monkeypatch):
    """Where onnxruntime's value of an intermediate is not numpy's (the export meant another
    thing there), the probe cannot tell TVM's wrong value apart: the finding keeps the
    output's op rather than take a wrong name."""
    import worker.onnx_judge as J

    real = J.onnxruntime_outputs

    def shifted_inside(model, feeds):
        out = real(model, feeds)
        if len(out) > 1:   # the probe's model (the case's has one output)
            out[0] = out[0] + 7
        return out

    monkeypatch.setattr(J, "onnxruntime_outputs", shifted_inside)
    o = _judge(_argmax_of_zeros_then_add(), opset=23)
    if o.verdict == "pass":
        pytest.skip("argmax of uint8 zeros is fixed in the TVM under test")
    assert o.extra["numeric_key"] == "relax.add:int64" and "output_op" not in o.extra


def test_a_passing_onnx_case_makes_no_probe(monkeypatch):
    """The probe is made only for a numeric finding: a passing case pays nothing for it."""
    import worker.onnx_judge as J

    made = []
    real = J.OnnxInputs.import_probe
    monkeypatch.setattr(J.OnnxInputs, "import_probe",
                        lambda self, *a: made.append(a) or real(self, *a))
    assert _judge(_small_valid(), opset=23).verdict == "pass"
    assert made == []


def test_onnx_cases_draw_no_bfloat16_values_and_nearly_all_export():
    """ONNX Runtime has no bfloat16 kernels, so the exporter writes none: an ONNX case's
    values are not drawn bfloat16 (GenContext.avoid_dtypes). Before, with weights as
    initializers or a bfloat16 value anywhere, all eight draws of 37 of 1000 seeds failed to
    export and were judged not_exportable (invalid, against validity). Relax programs of the
    same seeds draw as before."""
    from worker.campaign import make_onnx_case

    bf16, refused = 0, 0
    for s in range(800000, 800200):
        prog = make_onnx_case(s)
        bf16 += any(p.ty.dtype == "bfloat16" for f in prog.functions for p in f.params)
        try:
            export(prog, OnnxOptions.from_json(prog.options), make_inputs(prog, 0)[1])
        except NotExportable:
            refused += 1
    assert bf16 == 0
    assert refused <= 4, refused   # measured: 10 of 1000 (op-specific dtypes: acos float16...)
    assert generate(7, avoid_dtypes=()).dumps() == generate(7).dumps()


@pytest.mark.parametrize("eq, a, b, out", [
    ("...ij,...jk->...ik", [1, 1, 2, 3], [1, 3, 3], [1, 1, 2, 3]),   # campaign seed 900075
    ("i...j,i...j->i...", [2, 3, 4, 5], [2, 4, 5], [2, 3, 4]),
])
def test_an_einsum_whose_ellipses_differ_in_rank_exports_and_agrees(eq, a, b, out):
    """numpy broadcasts ellipsis dims of different ranks; ONNX wants every ``...`` the same
    rank, and onnxruntime refused such a model (an invalid case, ``onnx_rejected``): the
    shorter operand now gets unit dims where its ellipsis starts."""
    nodes = [Node("v1", "relax.einsum", ["a", "b"], {"subscripts": eq},
                  TensorTy(out, "float32"))]
    prog = _one(nodes, [Param("a", TensorTy(a, "float32")), Param("b", TensorTy(b, "float32"))],
                "v1")
    for opset in (18, 23):   # Einsum is ONNX's from opset 12
        o = _judge(prog, opset=opset)
        assert o.verdict == "pass", o.to_json()
