"""The fork server survives every way a case can end, on real TVM: each death is recorded with
its kind and the next case still runs and passes."""
import os
import signal
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from fuzz.generate import generate
from fuzz.outcome import Outcome
from fuzz.signature import bug_id, bug_key
from worker import jobs
from worker.execute import compile_and_run
from worker.sandbox import Sandbox

# Small enough that the hang test is quick, large enough for a generated case on a busy box.
TIMEOUT, MEM_MB = 4.0, 2048


@pytest.fixture(scope="module")
def sb():
    with Sandbox(timeout=TIMEOUT, mem_mb=MEM_MB) as s:
        yield s


def case(program):
    return {"kind": "case", "program": program.to_json()}


# Ops that pass on 0.27, so the case after each death is known to pass.
NEXT = case(generate(3, n_ops=4, ops=["relax.add", "relax.multiply", "relax.subtract",
                                      "relax.negative", "relax.maximum"]))


def _next_passes(sb):
    r = sb.run(NEXT)
    assert r["status"] == "ok" and r["result"]["verdict"] == "pass", r


def test_segv(sb):
    r = sb.run({"kind": "segv"})
    assert (r["status"], r["signal_name"]) == ("signal", "SIGSEGV")
    assert "Segfault" in r["stderr_tail"]   # TVM's handler printed a backtrace: it is kept
    _next_passes(sb)


def test_real_tvm_take_out_of_bounds_dies_by_sigsegv(sb):
    r = sb.run(case(jobs.take_out_of_bounds()))
    assert (r["status"], r["signal_name"]) == ("signal", "SIGSEGV")
    assert "out-of-bounds" in r["stderr_tail"]   # TVM's own warning, printed before the crash
    _next_passes(sb)


def test_real_tvm_floor_divide_by_zero_dies_by_sigfpe(sb):
    r = sb.run(case(jobs.floor_divide_by_zero()))
    assert (r["status"], r["signal"], r["signal_name"]) == ("signal", signal.SIGFPE, "SIGFPE")
    _next_passes(sb)


def test_hang_is_a_timeout(sb):
    r = sb.run({"kind": "sleep", "seconds": 600})
    assert r["status"] == "timeout" and TIMEOUT <= r["seconds"] < TIMEOUT + 3
    _next_passes(sb)


def test_allocation_past_the_limit_is_oom(sb):
    r = sb.run({"kind": "alloc", "mb": MEM_MB + 512})
    assert r["status"] == "oom" and "Unable to allocate" in r["error"]
    _next_passes(sb)


def test_memory_limit_is_the_case_budget_on_top_of_the_imports():
    # Importing TVM maps ~0.5 GB (with torch installed, tvm_ffi imports it: ~3.8 GB), more than
    # this budget: were the limit absolute, every case would die at its first allocation.
    with Sandbox(timeout=TIMEOUT, mem_mb=300) as small:
        assert small.run({"kind": "alloc", "mb": 200})["status"] == "ok"
        assert small.run({"kind": "alloc", "mb": 400})["status"] == "oom"
        _next_passes(small)


def test_real_tvm_allocation_past_the_limit_is_oom(sb):
    # A 4 GiB broadcast result from 128 KiB of inputs: TVM raises std::bad_alloc at run time.
    r = sb.run(case(jobs.huge_broadcast()))
    assert r["status"] == "oom" and "bad_alloc" in r["error"]
    _next_passes(sb)


def test_batch_blames_exactly_the_guilty_job(sb):
    batch = [{"kind": "echo", "value": 1}, case(jobs.floor_divide_by_zero()),
             {"kind": "exit", "code": 7}, NEXT, {"kind": "echo", "value": 2}]
    r = sb.run_many(batch)
    assert [x["status"] for x in r] == ["ok", "signal", "exit", "ok", "ok"]
    assert r[1]["rerun"] and r[1]["signal_name"] == "SIGFPE" and r[2]["exit_code"] == 7
    assert r[4]["result"] == {"echo": 2}


def test_generated_cases_match_in_process(sb):
    progs = [generate(s) for s in (1, 2, 5)]
    got = sb.run_many([case(p) for p in progs])
    for p, r in zip(progs, got):
        want = compile_and_run(p).to_json()
        assert r["status"] == "ok", r
        keys = ("verdict", "kind", "stage", "error_type", "message")
        assert {k: r["result"][k] for k in keys} == {k: want[k] for k in keys}


def test_server_death_loses_only_the_job_in_flight():
    with Sandbox(timeout=TIMEOUT, mem_mb=MEM_MB, recycle_after=2, batch=1) as s:
        pid = s.proc.pid
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()
        r = s.run_many([{"kind": "sleep", "seconds": 2}, {"kind": "echo", "value": 1}])
        assert r[0]["status"] == "lost" and "SIGKILL" in r[0]["reason"]
        assert r[1]["result"] == {"echo": 1} and s.proc.pid != pid
        s.run_many([{"kind": "echo"}] * 3)   # recycle_after=2: one more restart
        assert s.restarts >= 1


# --- where a death happened ------------------------------------------------------------------
def test_a_death_names_its_stage_variant_and_python_stack():
    """A signal is placed by the child's breadcrumbs: the stage it died in, the variant being
    run, faulthandler's Python stack; two different deaths get two signatures."""
    from worker.jobs import floor_divide_by_zero, take_out_of_bounds
    from worker.sandbox_runner import SandboxRunner

    runner = SandboxRunner(timeout=120)
    try:
        fpe, segv = runner(floor_divide_by_zero()), runner(take_out_of_bounds())
    finally:
        runner.close()
    # the VM call that was running names the kernel each died in: two bugs, not one
    # "memory fault in run"
    assert fpe.signature == ("signal | run | SIGFPE | killed by SIGFPE in run | "
                                "in kernel floor_divide")
    assert segv.signature == "signal | run | SIGSEGV | killed by SIGSEGV in run | in kernel take"
    assert bug_key(segv) == "signal | run | memory fault | in kernel take"
    other = replace(segv, extra=dict(segv.extra, kernel="sort"))
    assert bug_id(other) != bug_id(segv)
    assert bug_id(replace(segv, extra=dict(segv.extra, kernel="take1"))) == bug_id(segv)
    for o in (fpe, segv):
        assert o.stage == "run" and o.target == "llvm/default"
        assert o.extra["variant"] == {"target": {"kind": "llvm"}, "pipeline": "default",
                                         "passes": [], "exec_mode": "bytecode",
                                         "extra_passes": []}
        assert o.extra["python_stack"][0].startswith("worker/execute.py:")


def _judge_data_case(name: str) -> Outcome:
    """The outcome of tests/data/<name> judged in a fresh sandbox, as a campaign judges it."""
    from worker.sandbox_runner import SandboxRunner
    from worker.user_input import read_input

    kind, prog = read_input(Path(__file__).parent / "data" / name)
    runner = SandboxRunner(timeout=120)
    try:
        return runner(prog)
    finally:
        runner.close()


def test_a_segfault_in_tvms_cpp_names_its_native_frame():
    """A reindex that segfaults inside TVM (a campaign finding): tvm-ffi's native backtrace
    names the C++ function, and the finding keeps it; a segfault in generated code (run)
    has no such frame."""
    from worker.sandbox_runner import native_frames

    out = _judge_data_case("tir_reindex_segfault.json")
    assert out.kind == "signal" and out.stage == "schedule", out
    assert out.extra["native_frames"][0] == "tvm::s_tir::ReIndex"
    assert "| in tvm::s_tir::ReIndex [primitive reindex]" in out.signature
    assert native_frames("Fatal Python error: Segmentation fault\n") == []


def test_a_segfault_while_the_module_is_constructed_names_the_op():
    """attention_bias over a tensor whose shape a mutant erased segfaults in its type
    inference: Python's faulthandler hides the C++ frames, so the op whose node was being
    built (a breadcrumb) names it: not one 'memory fault in materialize' for every op. The bug
    key names the inference function the op shares with relax.nn.attention."""
    out = _judge_data_case("relax_materialize_segfault.json")
    assert (out.kind, out.stage) == ("signal", "materialize"), out
    assert out.extra["op"] == "relax.nn.attention_bias"
    assert out.signature.endswith("| in op relax.nn.attention_bias")
    assert bug_key(out) == ("signal | materialize | memory fault | in type inference "
                            "InferTypeAttention (src/relax/op/nn/attention.cc)")


def test_a_segfault_inside_a_schedule_primitive_names_the_step():
    from worker import tir_schedule as TS
    from worker.sandbox_runner import outcome_from_result
    from fuzz.signature import bug_key

    bug = next(b for b in TS.KNOWN_BUGS if b["id"] == "loop_partition-segfault")
    with Sandbox(timeout=120) as sb:
        res = sb.run({"kind": "standard_schedule", "module": bug["module"],
                      "steps": bug["steps"]})
    out = outcome_from_result(res)
    assert res["status"] == "signal", res
    sig = res["signal_name"]   # a corrupted heap: SIGSEGV, or glibc's SIGABRT, run to run
    assert sig in ("SIGSEGV", "SIGABRT")
    frame = " | in tvm::s_tir::LoopPartition" if sig == "SIGSEGV" else ""
    assert out.signature == (f"signal | schedule | {sig} | killed by {sig} in schedule"
                                f"{frame} [primitive loop_partition]")
    # the primitive names the bug, not the frame (a SIGABRT has none)
    assert bug_key(out) == "signal | schedule | memory fault [primitive loop_partition]"
    if sig == "SIGSEGV":   # tvm-ffi's native backtrace
        assert out.extra["native_frames"][0] == "tvm::s_tir::LoopPartition"
    assert out.extra["failing_step"] == bug["steps"][1]
    assert out.extra["schedule"] == bug["steps"]    # what a replay must apply, in order
    assert any("loop_partition" in f for f in out.extra["python_stack"])


def test_a_death_after_the_schedule_records_the_steps_applied():
    """A case that died running its scheduled code keeps the steps its breadcrumb recorded,
    so the campaign freezes them (campaign seed 110000's run-stage deaths had none)."""
    from worker.sandbox_runner import outcome_from_result

    steps = [{"prim": "split", "func": "main"}, {"prim": "blockize", "func": "main"}]
    o = outcome_from_result({"status": "signal", "signal_name": "SIGSEGV",
                             "where": {"stage": "run", "steps": steps}})
    assert o.kind == "signal" and o.stage == "run" and o.extra["schedule"] == steps
    assert "failing_step" not in o.extra
