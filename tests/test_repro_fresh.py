"""Every repro.py tvmfuzz writes reproduces its own bug in a fresh process (exit 1), for each
kind of finding: a Relax "scheduled" build (wrong values, and a crash inside the schedule),
a pass order, the C backend, a print/parse round trip, shape inference, wrong values against
numpy, deaths by signal, and users' TVMScript files whose parameters have dim expressions,
unknown shapes, shape, prim and tuple values. All real TVM 0.27 bugs. ``tvmfuzz report``
writes most of them (no reduction: faster); ``tvmfuzz reduce`` the ones where reducing is
what went wrong before (scheduled cases, a user file)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfuzz.cli import main
from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from worker.jobs import floor_divide_by_zero, take_out_of_bounds

F32 = "float32"
DATA = Path(__file__).parent / "data"
BASE = {"target": {"kind": "llvm"}, "pipeline": "default", "passes": [], "exec_mode": "bytecode"}


def _one(op, dtype, variants, attrs=None, out=None, lo=-0.9, hi=0.9, shape=(4,)):
    t = TensorTy(list(shape), dtype)
    return Program([Function("main", [Param("x", t, lo, hi)],
                             [Block(True, [Node("v1", op, ["x"], attrs or {}, out or t)])], "v1")],
                   "main", {"mode": "valid", "seed": 3, "variants": variants})


def scheduled(seed):
    """x @ w + b on float32 with a random schedule (seed 116: loop_partition of the matmul's
    reduction loop gives wrong sums; seed 10: decompose_padding raises an InternalError)."""
    params = [Param("x", TensorTy([8, 16], F32)), Param("w", TensorTy([16, 12], F32)),
              Param("b", TensorTy([8, 12], F32))]
    nodes = [Node("v1", "relax.matmul", ["x", "w"], {"out_dtype": None}, TensorTy([8, 12], F32)),
             Node("v2", "relax.add", ["v1", "b"], {}, TensorTy([8, 12], F32))]
    sched = {"target": {"kind": "llvm", "opt-level": 2}, "pipeline": "scheduled", "passes": [],
             "exec_mode": "bytecode", "schedule_seed": seed}
    return Program([Function("main", params, [Block(True, nodes)], "v2")], "main",
                   {"mode": "valid", "seed": 0, "variants": [BASE, sched]})


def pass_order():
    """float16 asin (no LLVM lowering) built with a pass order and the compiled exec mode."""
    return _one("relax.asin", "float16", [{
        "target": {"kind": "llvm", "opt-level": 1}, "pipeline": "passes",
        "passes": ["FoldConstant", "LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"],
        "exec_mode": "compiled"}])


def gpu_host_code():
    """index_put built for OpenCL (compile-only here): its PrimFunc binds no GPU thread, so
    the build leaves it as host code reading device memory (the CUDA build of it segfaulted
    on an H200)."""
    x, i, v = TensorTy([6, 2], F32), TensorTy([4], "int64"), TensorTy([4], F32)
    node = Node("v1", "relax.index_put", ["x", "i0", "i1", "v"], {"accumulate": True}, x)
    params = [Param("x", x), Param("i0", i, 0, 5), Param("i1", i, 0, 1), Param("v", v)]
    gpu = {"target": {"kind": "opencl"}, "pipeline": "target", "passes": [],
           "exec_mode": "bytecode"}
    return Program([Function("main", params, [Block(True, [node])], "v1")], "main",
                   {"mode": "valid", "seed": 0, "variants": [BASE, gpu]})


def zoo_passes():
    """float16 asin built after zoo passes whose arguments the case carries (fusion by a
    generated pattern, a layout, a sort order): repro.py constructs them the same way."""
    return _one("relax.asin", "float16", [{
        "target": {"kind": "llvm"}, "pipeline": "passes",
        "passes": ["FoldConstant", "FuseOpsByPattern:relax.asin;relax.add@c>relax.exp",
                   "TopologicalSort:breadth-first,from-outputs", "ConvertLayout:NHWC"],
        "exec_mode": "bytecode"}])


def c_backend():
    """float16 asin on the C backend: codegen_c's own "Unresolved call"."""
    return _one("relax.asin", "float16", [{"target": {"kind": "c"}, "pipeline": "default",
                                           "passes": [], "exec_mode": "bytecode"}])


def roundtrip():
    """one_hot with int32 on/off values prints them as bare ints, which parse back as int64."""
    return _one("relax.one_hot", "int32", [BASE], {"on_value": 3, "off_value": -1, "depth": 4,
                                                   "axis": -1, "dtype": "int32"},
                TensorTy([3, 4], "int32"), 0, 3, (3,))


def shape_inference():
    """arange(0, 0, -1): TVM infers 2 elements, numpy none."""
    f32 = TensorTy([0], F32)
    node = Node("r", "relax.arange", [], {"start": 0, "end": 0, "step": -1, "dtype": F32}, f32)
    return Program([Function("main", [Param("p", f32)], [Block(True, [node])], "r")], "main",
                   {"mode": "valid", "seed": 3})


def constructing():
    """eye_like of a parameter whose shape was erased (ndim 2 only): TVM dies constructing the
    module ("Back optional access" in its type inference), so there is no module to print;
    repro.py constructs it with relax.BlockBuilder."""
    erased = TensorTy(None, F32, ndim=2)
    p = Param("p1", erased, actual=TensorTy([1, 1], F32))
    node = Node("v2", "relax.eye_like", ["p1"], {"dtype": F32, "k": 0}, TensorTy([1, 1], F32))
    return Program([Function("main", [p], [Block(False, [node])], "v2")], "main",
                   {"mode": "near-valid", "seed": 3, "variants": [BASE]})


def numeric():
    """argmax of uint8 zeros returns -1 (numpy: 0)."""
    return _one("relax.argmax", "uint8", [BASE], {"axis": 0, "keepdims": False},
                TensorTy([], "int64"), 0, 0)


HEADER = ("from tvm.script import ir as I\nfrom tvm.script import relax as R\n"
          "from tvm.script import tirx as T\n\n\n@I.ir_module\nclass Module:\n    @R.function\n")
# A build failure (float16 asin) next to parameters whose inputs repro.py could not make
# before: a dim expression, unknown shape, only an ndim.
USER_BUILD = HEADER + '''\
    def main(x: R.Tensor(("n",), dtype="float16"), y: R.Tensor(("n + 2",), dtype="float32"),
             z: R.Tensor(dtype="float32"), u: R.Tensor(dtype="float32", ndim=2)):
        n = T.int64()
        with R.dataflow():
            a: R.Tensor((n,), dtype="float16") = R.asin(x)
            b: R.Tensor((n + 2,), dtype="float32") = R.add(y, y)
            R.output(a, b)
        return (a, b, z, u)
'''
# A failure at run time (topk with k < -1), so every parameter needs an input: a dim
# expression, an unknown shape a match_cast fixes, an ndim only, a shape, a prim, a tuple.
USER_RUN = HEADER + '''\
    def main(x: R.Tensor(("n + 2",), dtype="float32"), z: R.Tensor(dtype="float32"),
             u: R.Tensor(dtype="float32", ndim=2), s: R.Shape(["n", 3]), p: R.Prim("int64"),
             t: R.Tuple(R.Tensor((2,), dtype="int32"), R.Shape(ndim=2))):
        n = T.int64()
        m = T.int64()
        w = R.match_cast(z, R.Tensor((m, m * 4), dtype="float32"))
        a = R.topk(x, k=-2, axis=-1, ret_type="values", largest=True)
        return (a, w, u, s, p, t)
'''
# CodeGenVM refuses an op no pass lowered (ewise_fma has no legalization): raised after the
# last pass, so no pass is to blame.
USER_CODEGEN = HEADER + '''\
    def main(x: R.Tensor((4,), dtype="float32")):
        y = R.ewise_fma(x, x, x)
        return y
'''

CASES = {
    "scheduled_crash": (scheduled(10), "decompose_padding"),
    "pass_order": (pass_order(), "tirx.asin"),
    "zoo_passes": (zoo_passes(), "tirx.asin"),
    "c_backend": (c_backend(), "Unresolved call"),
    "gpu_host_code": (gpu_host_code(), "binds no GPU thread"),
    "roundtrip": (roundtrip(), "printed module does not parse"),
    "shape_inference": (shape_inference(), "relax.arange infers the wrong extent"),
    "numeric": (numeric(), "relax.argmax"),
    "constructing": (constructing(), "Back optional access"),
    "signal_fpe": (floor_divide_by_zero(), "SIGFPE"),
    "signal_segv": (take_out_of_bounds(), "SIGSEGV"),
    "user_build": (USER_BUILD, "tirx.asin"),
    "user_run": (USER_RUN, "vector::reserve"),
    "user_codegen": (USER_CODEGEN, "CodeGenVM"),
    # deaths by signal inside a schedule step: the deadly primitive's call is written into
    # repro.py's schedule without being made while tracing (the trace used to die with it)
    "scheduled_signal": (DATA / "relax_scheduled_reindex_segfault.json", "SIGSEGV"),
    "tir_scheduled_signal": (DATA / "tir_reindex_segfault.json", "SIGSEGV"),
    # cache_write rewrote an earlier statement's read of p1 into the unwritten local cache:
    # its repro.py paints the stack before the kernel, so it reproduces in a fresh process
    "tir_uninitialized_local": (DATA / "tir_cache_write_uninit_local.json", "cache_write"),
    # a reduced ONNX case whose inputs have dim expressions (r2: [m + 4]): the model repro.py
    # builds declared them 0 (unknown in the exported model), so onnxruntime refused them
    "onnx_dim_expression_inputs": (DATA / "onnx_dim_expression_inputs.json", "tensor_to_shape"),
}


def fresh_run(repro: Path) -> subprocess.CompletedProcess:
    """repro.py copied alone into an empty directory and run by a new interpreter with only
    TVM and numpy importable (no PYTHONPATH: nothing of tvmfuzz)."""
    fresh = repro.parent.parent / (repro.parent.name + "-fresh")
    fresh.mkdir()
    (fresh / "repro.py").write_text(repro.read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "repro.py"], cwd=fresh, env=env,
                          capture_output=True, text=True, timeout=300)


def _write_input(tmp_path, value) -> Path:
    if isinstance(value, Path):
        path = tmp_path / value.name
        path.write_text(value.read_text())
    elif isinstance(value, Program):
        path = tmp_path / "case.json"
        path.write_text(value.dumps())
    else:
        path = tmp_path / "model.py"
        path.write_text(value)
    return path


def _cli(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out + out.err


def _check_report(report: str):
    """report.md as a maintainer pastes it: no normalized placeholders in the title, no
    empty list lines, tvmfuzz's own step never shown as a TVM pass."""
    title = report.splitlines()[0]
    assert "#" not in title[2:] and " N " not in title and "N)" not in title, title
    assert "tvmfuzz.RandomSchedule" not in title and "AttachGlobalSymbol" not in report
    assert "failing pass `tvmfuzz." not in report
    for line in report.splitlines():
        assert not line.rstrip().endswith(("- Build:", ":**")), line


# Kinds a faster case of the same judge covers in the default run; CI runs them in its slow
# step (a case is 10-15 s: a report, then a new interpreter importing TVM).
SLOW_CASES = {"pass_order", "zoo_passes", "constructing", "signal_fpe", "user_run",
              "user_codegen", "scheduled_signal", "tir_scheduled_signal"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES
                                  else n for n in CASES])
def test_reported_repro_reproduces_in_a_fresh_process(tmp_path, capsys, name):
    value, needle = CASES[name]
    out = tmp_path / "rep"
    rc, text = _cli(["report", str(_write_input(tmp_path, value)), "--out", str(out),
                     "--no-bisect"], capsys)
    assert rc == 0, text
    assert needle in text, text
    r = fresh_run(out / "repro.py")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "REPRODUCED" in r.stdout
    report = (out / "report.md").read_text()
    _check_report(report)
    if name.endswith("scheduled_signal"):
        assert "could not be written" not in report and "cannot replay" not in report
        assert "s_tir schedule primitive reindex" in report.splitlines()[0], report[:300]
    if name == "scheduled_crash":
        assert "s_tir schedule primitive decompose_padding" in report.splitlines()[0]
        assert "### The schedule tvmfuzz applied" in report and "sch.decompose_padding(" in report
    if name == "constructing":
        assert "relax.BlockBuilder" in report and "relax.op.eye_like(p1" in report
    if name == "gpu_host_code":   # the build succeeds: what is wrong is in the built module
        assert "The build itself succeeds" in report and "the build fails" not in report
    if name == "user_codegen":
        assert "in code generation" in report.splitlines()[0]
        assert "after the last pass finished" in report


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scheduled_numeric", "user_build"])
def test_reduced_repro_reproduces_in_a_fresh_process(tmp_path, capsys, name):
    value = scheduled(116) if name == "scheduled_numeric" else USER_BUILD
    out = tmp_path / "red"
    rc, text = _cli(["reduce", str(_write_input(tmp_path, value)), "--out", str(out)],
                    capsys)
    assert rc == 0, text
    assert "reproduces 3/3" in text
    r = fresh_run(out / "repro.py")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    report = (out / "report.md").read_text()
    _check_report(report)
    if name == "scheduled_numeric":
        assert "### The schedule tvmfuzz applied" in report
        assert "replaying the schedule tvmfuzz applied" in r.stdout


# --- the pieces, in this process ----------------------------------------------------------
def test_inputs_for_every_parameter_kind():
    import numpy as np
    import tvm

    from worker.script_inputs import NoInputs, ShapeValue, input_values, vm_arguments

    mod = tvm.script.from_source(USER_RUN.replace("from tvm.script", "# from tvm.script"))
    x, z, u, s, p, t = input_values(mod["main"], seed=0)
    n, m = s[0], z.shape[0]
    assert x.shape == (n + 2,) and x.dtype == np.float32
    assert z.shape == (m, m * 4)                      # the match_cast's shape
    assert u.ndim == 2 and isinstance(s, ShapeValue) and s[1] == 3
    assert isinstance(p, int) and t[0].shape == (2,) and t[0].dtype == np.int32
    assert isinstance(t[1], ShapeValue) and len(t[1]) == 2
    again = input_values(mod["main"], seed=0)
    assert all(np.array_equal(a, b) for a, b in zip((x, z, u), again[:3]))
    args = vm_arguments([x, s, t], lambda a: tvm.runtime.tensor(a))
    assert isinstance(args[1], tvm.runtime.ShapeTuple) and isinstance(args[2], tuple)
    obj = tvm.script.from_source(HEADER.replace("from tvm.script", "# from tvm.script") +
                                 "    def main(o: R.Object):\n        return o\n")
    with pytest.raises(NoInputs, match="parameter o"):
        input_values(obj["main"])


def test_schedule_trace_replays_the_schedule_applied():
    """Each step as TVM's trace (and as the primitive's call written by tvmfuzz, the form a
    crashing step takes) replays to the module random_schedule made."""
    import random

    import tvm

    from worker import tir_schedule as TS

    mod = TS.legalized_module()
    replayed = 0
    for seed in range(12):
        try:
            new, applied = TS.random_schedule(mod, random.Random(seed), steps=4)
        except Exception:  # noqa: BLE001 - a TVM bug in a step; not this test's subject
            continue
        for own in (False, True):
            traces = TS.step_traces(mod, applied, own_calls=own)
            assert not any(t.get("unwritable") for t in traces)
            tvm.ir.assert_structural_equal(new, TS.replay_traces(mod, traces))
        replayed += len(applied)
    assert replayed >= 20


def test_an_index_map_of_an_int32_block_replays_as_the_same_map():
    """An index map written in tvmfuzz's own call (the form a crashing step takes) keeps
    its map's int32 index dtype: TVM's printer leaves it out, and T.index_map's int64 default
    made a fresh repro.py meet another check than the worker (df396bf9b6df)."""
    import tvm
    from tvm.script import tirx as T

    from worker import tir_schedule as TS

    @T.prim_func(s_tir=True)
    def f(a: T.Buffer((8, 4), "float32"), b: T.Buffer((8, 4), "float32")):
        t = T.alloc_buffer((8, 4))
        for i, j in T.grid(8, 4):
            with T.sblock("c"):
                vi, vj = T.axis.remap("SS", [i, j])
                t[vi, vj] = a[vi, vj] + T.float32(1)
        for i, j in T.grid(8, 4):
            with T.sblock("d"):
                vi, vj = T.axis.remap("SS", [i, j])
                b[vi, vj] = t[vi, vj]

    mod = tvm.IRModule({"main": f})
    step = {"prim": "transform_block_layout", "func": "main", "block": "c",
            "map": {"kind": "fuse", "shape": [8, 4]}}
    new = TS.apply_schedule(mod, [step])
    [trace] = TS.step_traces(mod, [step], own_calls=True)
    assert 'index_dtype="int32"' in trace["trace"][-1], trace
    tvm.ir.assert_structural_equal(new, TS.replay_traces(mod, [trace]))


def test_repro_code_is_the_workers_own():
    """repro.py carries the worker's functions verbatim, and they run without tvmfuzz."""
    import inspect

    from reducer.repro import shared_code
    from worker import variants

    code = shared_code()
    assert inspect.getsource(variants.pipeline_for) in code
    assert not any(f"{how} {pkg}" in code for how in ("import", "from")
               for pkg in ("worker", "fuzz", "reducer"))
    namespace: dict = {}
    exec(compile("from __future__ import annotations\nimport functools\n" + code, "shared",
                 "exec"), namespace)
    for name in ("build_for", "vm_for", "pass_watch", "replay_traces", "input_values",
                 "roundtrip_problem", "runnable_here"):
        assert callable(namespace[name]), name


def test_repro_embeds_the_cases_own_inputs_bfloat16_too(tmp_path):
    import runpy

    import numpy as np

    from fuzz.inputs import make_inputs
    from fuzz.outcome import Outcome
    from reducer.repro import repro_text

    prog = _one("relax.abs", "bfloat16", [BASE], lo=-2.0, hi=2.0, shape=(3, 2))
    path = tmp_path / "repro.py"
    path.write_text(repro_text("# the module", Outcome("fail", "crash", "run"), prog))
    ns = runpy.run_path(str(path), run_name="not_main")   # definitions only
    got = ns["unpack"](ns["CASE"]["inputs"]["data"])
    _, want = make_inputs(prog, prog.meta["seed"])
    assert [str(a.dtype) for a in got] == ["bfloat16"]
    assert np.array_equal(got[0].astype(np.float32), want[0].astype(np.float32))


def test_a_repro_that_breaks_itself_exits_2_never_1(tmp_path, capsys):
    """Python ends an uncaught exception with exit status 1, which reads as REPRODUCED: a
    reproducer's own trouble (here: a name its code lacks, as when a TVM API moved) must be 2,
    in the Relax and the TIR template alike."""
    from worker.campaign import make_case

    tir = tmp_path / "tir.json"     # a TIR wrong result (cache_write, found by a campaign)
    tir.write_text(make_case(70079, None, ("llvm",), ("tir",), True, {}).dumps())
    for name, path in (("relax", _write_input(tmp_path, pass_order())), ("tir", tir)):
        out = tmp_path / name
        rc, text = _cli(["report", str(path), "--out", str(out), "--no-bisect"], capsys)
        assert rc == 0, text
        broken = out / "broken" / "repro.py"
        broken.parent.mkdir()
        src = (out / "repro.py").read_text()
        broken.write_text(src.replace("\ndef main():\n", "\ndef main():\n    no_such_name\n", 1))
        r = fresh_run(broken)
        assert r.returncode == 2, r.stdout[-2000:] + r.stderr[-2000:]
        assert "NameError" in r.stderr and "not the bug" in r.stdout


def test_tir_repro_of_a_call_tir_finding_builds_through_relax(tmp_path, capsys):
    """A PrimFunc that builds alone but crashes relax.build when called through R.call_tir
    (RewriteDataflowReshape's HasReshapePattern wants a block body; a reduced campaign case):
    its repro.py wraps it in a Relax main as the worker did, instead of giving up (exit 2)."""
    case = Path(__file__).parent / "data" / "tir_call_tir_crash.json"
    out = tmp_path / "rep"
    rc, text = _cli(["report", str(case), "--out", str(out), "--no-bisect"], capsys)
    assert rc == 0 and "RewriteDataflowReshape" in text, text
    r = fresh_run(out / "repro.py")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "REPRODUCED" in r.stdout and "SBlockRealizeNode" in r.stdout


def test_repro_of_an_out_of_memory_finding_reproduces_without_the_sandbox_cap(tmp_path, capsys):
    """split past the end of its axis: under the sandbox's memory cap the case runs out of
    memory (kind oom); repro.py, without the cap, sees the same allocation fail as
    std::bad_alloc, which is that finding (it used to exit 2, 'a different failure')."""
    case = Path(__file__).parent / "data" / "relax_split_oom.json"
    out = tmp_path / "rep"
    rc, text = _cli(["report", str(case), "--out", str(out), "--no-bisect"], capsys)
    assert rc == 0 and "oom | " in text, text
    r = fresh_run(out / "repro.py")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    assert "BUG REPRODUCED" in r.stdout and "bad_alloc" in r.stdout
