"""PyTorch cases: the module writer (fuzz/torch_export.py) against eager PyTorch and the numpy
reference; the torch case kind's judge (worker/torch_judge.py) on the real torch.export and
TVM importer; repro.py of an import finding in a fresh interpreter; a short --ir torch
campaign. Real torch and TVM; marked torch, skipped where torch is not installed (the
tvmfuzz[torch] extra)."""
from __future__ import annotations

import collections
import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from fuzz import reference  # noqa: E402
from fuzz.generate import generate  # noqa: E402
from fuzz.inputs import make_inputs  # noqa: E402
from fuzz.model import Block, Function, Node, Param, Program, TensorTy, TorchProgram  # noqa: E402
from fuzz.torch_export import (EXPORTABLE_OPS, NotExportable, TorchOptions,  # noqa: E402
                               full_source, module_source, source_problem, user_inputs)
from worker import cases  # noqa: E402
from worker.campaign import make_case, run_campaign  # noqa: E402
from worker.torch_judge import load_module, to_numpy, to_torch  # noqa: E402

pytestmark = pytest.mark.torch


def _one(nodes, params, ret, options=None, seed=0) -> TorchProgram:
    return TorchProgram.of(Program([Function("main", params, [Block(True, nodes)], ret)],
                                   "main", {"mode": "valid", "seed": seed}), options or {})


def test_written_modules_run_eagerly_and_agree_with_numpy():
    """Every written module runs in eager PyTorch and its outputs agree with the numpy
    reference of the program, with and without weights and dynamic dims."""
    tally = collections.Counter()
    torch.set_num_threads(1)
    for seed in range(150):
        prog = generate(seed, ops=EXPORTABLE_OPS)
        opts = TorchOptions(weights=seed % 2 == 0, dynamic=seed % 3 == 0)
        env, arrays = make_inputs(prog, seed)
        try:
            source = full_source(prog, opts, arrays)
        except NotExportable:
            tally["not exportable"] += 1
            continue
        model, _ = load_module(source)
        ins = user_inputs(prog, opts, arrays)
        try:
            with torch.no_grad():
                out = [to_numpy(t) for t in model(*[to_torch(a) for a in ins.values()])]
        except NotImplementedError as e:   # no CPU kernel for a dtype: torch_rejected
            assert "not implemented for" in str(e), (seed, str(e))
            tally["no kernel"] += 1
            continue
        expected = reference.flatten(reference.run(prog, arrays, env))
        diff = reference.compare(prog, expected, out)
        tally["agree" if diff is None else "differ"] += 1
        assert diff is None or "differ" in diff[1], (seed, diff)   # never a shape or count
    assert tally["agree"] >= 60 and tally["differ"] <= tally["agree"] // 10, tally


def test_source_is_plain_text_with_dynamic_dims():
    x = Param("x", TensorTy(["n", 4], "float32"))
    w = Param("w", TensorTy([4, 3], "float32"))
    nodes = [Node("v1", "relax.matmul", ["x", "w"], {}, TensorTy(["n", 3], "float32")),
             Node("v2", "relax.reshape", ["v1"], {"shape": ["n * 3"]},
                  TensorTy(["n * 3"], "float32"))]
    prog = _one(nodes, [x, w], "v2", {"weights": True})
    _, arrays = make_inputs(prog, 0)
    src = module_source(prog, TorchOptions(weights=True), arrays)
    assert "torch.nn.Parameter" in src and "def forward(self, x):" in src
    assert "x.shape[0] * 3" in src.replace("(", "").replace(")", "")
    assert "DYNAMIC = {'x': {0: 'n'}}" in src
    assert module_source(prog, TorchOptions(weights=True), arrays) == src   # deterministic


def test_code_in_names_or_attributes_is_refused():
    x = Param("x", TensorTy([4], "float32"))
    bad = _one([Node("v1", "relax.flip", ["x"], {"axis": "0]); import os #"},
                     TensorTy([4], "float32"))], [x], "v1")
    assert "not a plain value" in source_problem(bad)
    with pytest.raises(NotExportable):
        module_source(bad, TorchOptions())
    bad_name = _one([Node("v1", "relax.exp", ["x"], {}, TensorTy([4], "float32"))],
                    [Param("x=1;import os", TensorTy([4], "float32"))], "v1")
    assert "identifier" in source_problem(bad_name)
    from worker.user_input import case_problem

    assert "Python" in case_problem(bad)


def _judge(prog):
    return cases.judge(cases.job(prog))


def test_judge_passes_a_plain_module_with_every_flag():
    x = Param("x", TensorTy([2, 4], "float32"))
    w = Param("w", TensorTy([4, 3], "float32"))
    nodes = [Node("v1", "relax.matmul", ["x", "w"], {}, TensorTy([2, 3], "float32")),
             Node("v2", "relax.nn.relu", ["v1"], {}, TensorTy([2, 3], "float32"))]
    for opts in ({}, {"weights": True, "keep_params_as_input": True, "decompose": True},
                 {"unwrap_unit_return_tuple": True, "run_ep_decomposition": False},
                 {"no_bind_return_tuple": True}):
        o = _judge(_one(nodes, [x, w], "v2", opts))
        assert o.verdict == "pass", (opts, o.to_json())
    # every dim of x dynamic (the sum keeps them so: no dim torch specializes)
    o = _judge(_one([Node("v1", "relax.sum", ["x"], {"axis": [1], "keepdims": True},
                          TensorTy([2, 1], "float32"))], [x], "v1", {"dynamic": True}))
    assert o.verdict == "pass", o.to_json()


def test_importer_error_is_an_import_crash_with_its_converter():
    """TVM 0.27's importer has no converter for aten.amin: stage import, the op named."""
    x = Param("x", TensorTy([3, 4], "float32"))
    prog = _one([Node("v1", "relax.min", ["x"], {"axis": [1], "keepdims": False},
                      TensorTy([3], "float32"))], [x], "v1", {"run_ep_decomposition": False})
    o = _judge(prog)
    assert (o.verdict, o.kind, o.stage) == ("fail", "crash", "import"), o.to_json()
    assert "amin" in o.extra["converter"]
    assert "[converter unsupported amin.default]" in o.signature


def test_not_exportable_and_torch_rejected_are_invalid():
    x = Param("x", TensorTy([4], "float32"))
    prog = _one([Node("v1", "relax.strided_slice", ["x"],
                      {"axes": [0], "begin": [3], "end": [0], "strides": [-1]},
                      TensorTy([3], "float32"))], [x], "v1")
    o = _judge(prog)
    assert (o.verdict, o.kind, o.stage) == ("invalid", "not_exportable", "export")
    # eager torch has no int max_pool: not TVM's, counted apart
    y = Param("y", TensorTy([1, 1, 4], "float32"))
    ok = _one([Node("v1", "relax.nn.max_pool1d", ["y"],
                    {"pool_size": [2], "strides": [2], "padding": [0, 0], "dilation": [1],
                     "ceil_mode": False, "layout": "NCW"},
                    TensorTy([1, 1, 2], "float32"))], [y], "v1")
    assert _judge(ok).verdict == "pass"


def test_case_json_round_trips_and_campaign_cases_are_torch():
    prog = make_case(7, None, ir=("torch",))
    assert prog.ir == "torch" and "torch" in prog.meta
    back = Program.loads(prog.dumps())
    assert isinstance(back, TorchProgram) and back.meta["torch"] == prog.meta["torch"]
    assert cases.kind_of(back).name == "torch"


def test_repro_of_an_import_finding_reproduces_in_a_fresh_interpreter(tmp_path):
    from reducer.repro import torch_repro_text

    x = Param("x", TensorTy([3, 4], "float32"))
    prog = _one([Node("v1", "relax.min", ["x"], {"axis": [1], "keepdims": False},
                      TensorTy([3], "float32"))], [x], "v1", {"run_ep_decomposition": False})
    o = _judge(prog)
    assert o.stage == "import"
    path = tmp_path / "repro.py"
    path.write_text(torch_repro_text(prog, o))
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "from_exported_program" in r.stdout and "BUG REPRODUCED" in r.stdout


def test_short_torch_campaign(tmp_path):
    (tmp_path / "c").mkdir()
    summary = run_campaign(10, tmp_path / "c", seed=300, echo=lambda s: None, replays=1,
                           ir=("torch",), reduce=None, corpus=tmp_path / "corpus")
    assert summary["cases_by_ir"].get("torch", 0) == summary["cases"] >= 2, summary
    assert summary["verdicts"].get("pass", 0) > 0
    assert "torch" in summary["judged_per_s_by_ir"]


def test_an_interpreter_without_torch_says_so(monkeypatch):
    """A release's env without torch (bisect): invalid needs_torch, which bisect names."""
    from worker.bisect import _judge
    from worker.torch_judge import judge_torch

    x = Param("x", TensorTy([4], "float32"))
    prog = _one([Node("v1", "relax.exp", ["x"], {}, TensorTy([4], "float32"))], [x], "v1")
    monkeypatch.setitem(sys.modules, "torch", None)   # `import torch` raises ImportError
    o = judge_torch(prog)
    assert (o.verdict, o.kind) == ("invalid", "needs_torch"), o.to_json()
    row = _judge([o], "crash | import | x")
    assert row["verdict"] == "error" and "without torch" in row["message"]


def test_repro_with_weights_kept_as_inputs_passes_them_to_main(tmp_path):
    """Campaign 150000's repro.py of a dlight Transpose crash (a webgpu compile-only variant,
    weights kept as main's inputs) failed with NameError: the weights' code in repro.py used
    numpy without importing it. The reduced case is kept as data."""
    from pathlib import Path

    from reducer.repro import torch_repro_text
    from worker.replay import load_job

    data = Path(__file__).parent / "data" / "torch_keep_params_dlight_transpose.json"
    prog = Program.loads(data.read_text())
    assert prog.meta["torch"]["keep_params_as_input"] and prog.meta["torch"]["weights"]
    o = cases.judge(load_job(data))
    if o.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    path = tmp_path / "repro.py"
    path.write_text(torch_repro_text(prog, o))
    r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert "BUG REPRODUCED" in r.stdout


def test_a_numeric_finding_is_named_by_the_first_wrong_imported_op():
    """Campaign seed 106, reduced: from_exported_program computes conv_transpose1d of float64
    inputs in float32; a mean and a multiply carry the error to the output. The probe is
    written, exported and imported the case's way, so the finding is conv1d_transpose's (it
    was filed as the multiply's, the op at the output)."""
    from pathlib import Path

    from fuzz.signature import bug_key
    from worker.replay import load_job

    data = Path(__file__).parent / "data" / "torch_conv1d_transpose_f64_then_multiply.json"
    o = cases.judge(load_job(data))
    if o.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    assert (o.verdict, o.kind) == ("fail", "numeric"), o.to_json()
    assert o.extra["numeric_key"] == "relax.nn.conv1d_transpose:float64", o.to_json()
    assert o.extra["output_op"] == "relax.multiply:float64"
    assert bug_key(o) == "numeric | compare | relax.nn.conv1d_transpose"


@pytest.mark.parametrize("op", [f"relax.nn.{k}_pool{r}d" for k in ("max", "avg", "adaptive_avg")
                                for r in (1, 2, 3)])
def test_a_pool_is_written_only_in_dtypes_torch_has_a_cpu_kernel_for(op):
    """The writer's dtypes for a pool are those eager PyTorch runs on the CPU: a campaign's
    avg_pool3d on float16/bfloat16 was refused by torch ("avg_pool3d_out_frame" not
    implemented), an invalid case."""
    from fuzz.torch_export import WRITERS

    rank = int(op[-2])
    fn = getattr(torch.nn.functional, op.split(".")[-1])
    for dtype in WRITERS[op].dtypes:
        x = torch.ones([1, 1] + [4] * rank, dtype=getattr(torch, dtype))
        fn(x, 2)   # raises NotImplementedError where the CPU has no kernel
