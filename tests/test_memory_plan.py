"""The memory-planning oracle (worker.execute.planned_overlaps): after StaticPlanBlockMemory,
a tensor placed in a storage (at the same offset) while an earlier tensor in it is still
read, itself or through a view of it, is a finding (kind ``memory_plan_overlap``), found at
build time on any target, compile-only ones included. Real TVM: the planned modules below
are TVMScript, and the builds run the release under test.

On 0.25.0 and 0.26.0 the planner lost track of ``vm.builtin.reshape`` views, which
DispatchSortScan emits around a GPU cumsum (apache/tvm#20134), and of ``match_cast`` views
(apache/tvm#20220); 0.27 plans both apart.
"""
import subprocess

import pytest
from tvm.script import ir as I, relax as R

from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from fuzz.retype import retype
from fuzz.signature import bug_id, signature
from worker.execute import overlap_message, planned_overlaps

F = "float32"


@I.ir_module
class Planned:
    @R.function(pure=False)
    def view_live(a: R.Tensor((4, 8), dtype=F)) -> R.Tensor((4, 8), dtype=F):
        s: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        t0: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _0 = R.call_packed("f", a, t0, sinfo_args=R.Tuple())
        v: R.Tensor((32,), dtype=F) = R.call_packed(
            "vm.builtin.reshape", t0, R.shape([32]), sinfo_args=(R.Tensor((32,), dtype=F),))
        t1: R.Tensor((32,), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([32]), R.dtype(F), 0)
        _1 = R.call_packed("g", v, t1, sinfo_args=R.Tuple())
        return a

    @R.function(pure=False)
    def read_after(a: R.Tensor((4, 8), dtype=F)) -> R.Tensor((4, 8), dtype=F):
        s: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        t0: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _0 = R.call_packed("f", a, t0, sinfo_args=R.Tuple())
        t1: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _1 = R.call_packed("g", a, t1, sinfo_args=R.Tuple())
        pair = (t1, t0)
        return pair[1]

    @R.function(pure=False)
    def tuple_field(a: R.Tensor((4, 8), dtype=F)) -> R.Tensor((4, 8), dtype=F):
        s0: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        s1: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        t0: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s0, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        t1: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s1, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _0 = R.call_packed("f", a, t0, t1, sinfo_args=R.Tuple())
        pair = (t0, t1)
        x = pair[0]   # t1 is dead from here: its storage may take t2
        t2: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s1, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _1 = R.call_packed("g", x, t2, sinfo_args=R.Tuple())
        return t2

    @R.function(pure=False)
    def dead_view(a: R.Tensor((4, 8), dtype=F)) -> R.Tensor((4, 8), dtype=F):
        s: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        t0: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _0 = R.call_packed("f", a, t0, sinfo_args=R.Tuple())
        t1: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _1 = R.call_packed("g", a, t1, sinfo_args=R.Tuple())
        v = R.reshape(t0, R.shape([32]))   # a view nothing reads (0.27 leaves such bindings)
        return t1

    @R.function(pure=False)
    def reused_when_dead(a: R.Tensor((4, 8), dtype=F)) -> R.Tensor((4, 8), dtype=F):
        s: R.Any = R.memory.alloc_storage(R.shape([128]), 0, R.str("global"), R.dtype(F))
        t0: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _0 = R.call_packed("f", a, t0, sinfo_args=R.Tuple())
        v: R.Tensor((32,), dtype=F) = R.call_packed(
            "vm.builtin.reshape", t0, R.shape([32]), sinfo_args=(R.Tensor((32,), dtype=F),))
        o: R.Tensor((32,), dtype=F) = R.builtin.alloc_tensor(R.shape([32]), R.dtype(F), 0)
        _1 = R.call_packed("g", v, o, sinfo_args=R.Tuple())
        t1: R.Tensor((4, 8), dtype=F) = R.memory.alloc_tensor(s, 0, R.shape([4, 8]),
                                                              R.dtype(F), 0)
        _2 = R.call_packed("f", a, t1, sinfo_args=R.Tuple())
        return t1


def test_a_tensor_placed_over_a_live_one_is_found_itself_or_through_a_view():
    """Only there: a tensor dead when its storage is reused (a view of it read before, the
    other field of a tuple whose first field is read later, or one a view is made of that
    nothing reads) is no finding."""
    assert planned_overlaps(Planned) == [
        ("read_after", "s", "t1", "t0", "direct"),
        ("view_live", "s", "t1", "t0", "vm.builtin.reshape")]


def _overlap(view, names=("t1", "t0")):
    found = [("main", "storage", *names, view)]
    return {"verdict": "fail", "kind": "memory_plan_overlap", "stage": "build",
            "error_type": "", "message": overlap_message(found),
            "extra": {"failing_pass": "StaticPlanBlockMemory", "view": view}}


def test_an_overlap_is_one_bug_per_kind_of_view_whatever_the_names():
    assert signature(_overlap("match_cast")) == signature(_overlap("match_cast", ("a", "b")))
    assert bug_id(_overlap("vm.builtin.reshape")) == bug_id(
        _overlap("vm.builtin.reshape", ("alloc3", "alloc")))
    assert bug_id(_overlap("vm.builtin.reshape")) != bug_id(_overlap("match_cast"))


def gpu_cumsum(kind="opencl") -> Program:
    """cumsum along the last axis of a computed value, built for a GPU target (compile-only
    without one): DispatchSortScan reshapes the input with vm.builtin.reshape for its kernel."""
    t = TensorTy([4, 8], F)
    return retype(Program([Function("main", [Param("a", t), Param("b", t)], [Block(True, [
        Node("x", "relax.add", ["a", "b"]),
        Node("y", "relax.cumsum", ["x"], {"axis": -1, "dtype": None, "exclusive": False}),
        Node("z", "relax.multiply", ["y", "y"])])], "z")], "main",
        {"mode": "valid", "seed": 0, "variants": [
            {"target": {"kind": "llvm"}, "pipeline": "default"},
            {"target": {"kind": kind}, "pipeline": "target", "passes": [],
             "exec_mode": "bytecode"}]}))


def test_the_gpu_cumsum_is_planned_apart_on_this_release():
    from worker.sandbox_runner import SandboxRunner

    runner = SandboxRunner(timeout=120)
    try:
        out = runner(gpu_cumsum())
    finally:
        runner.close()
    assert out.verdict == "pass", out.signature


@pytest.mark.release
def test_the_gpu_cumsum_overlaps_on_the_releases_that_have_it(monkeypatch, release_home,
                                                               tmp_path):
    """apache/tvm#20134 on 0.25.0 and 0.26.0, without a GPU; the repro.py tvmfuzz writes for
    it exits 1 under the release's own interpreter (a fresh directory, nothing of tvmfuzz)."""
    from tvmfuzz.cli import main as cli
    from worker.releases import resolve
    from worker.sandbox_runner import SandboxRunner

    monkeypatch.setenv("TVMFUZZ_HOME", str(release_home))
    for version in ("0.25.0", "0.26.0"):
        runner = SandboxRunner(python=resolve(version), timeout=120)
        try:
            out = runner(gpu_cumsum())
        finally:
            runner.close()
        assert (out.verdict, out.kind) == ("fail", "memory_plan_overlap"), out.signature
        assert out.extra["view"] == "vm.builtin.reshape"
    case = tmp_path / "case.json"
    case.write_text(gpu_cumsum().dumps())
    cli(["report", str(case), "--out", str(tmp_path / "r"), "--env", "0.26.0", "--no-bisect"])
    report = (tmp_path / "r" / "report.md").read_text()
    assert "The build itself succeeds" in report and "the build fails" not in report
    # the evidence: which tensor went over which, and the function as planned
    assert "placed in storage over" in report and "R.memory.alloc_storage" in report
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "repro.py").write_text((tmp_path / "r" / "repro.py").read_text())
    run = subprocess.run([str(resolve("0.26.0")), "repro.py"], cwd=fresh, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "read later through vm.builtin.reshape" in run.stdout + run.stderr
