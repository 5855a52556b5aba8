"""One case-kind interface (worker.cases): every kind of case goes to the sandbox as one job
and is judged by one judge, and a Relax module is judged by one loop whether it came as a
program model or as TVMScript text."""
import pytest

from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from worker import cases


def _scheduled_program(schedule_seed: int) -> Program:
    t = TensorTy(["n", 16], "float32")
    base = {"target": {"kind": "llvm"}, "pipeline": "default", "passes": [],
            "exec_mode": "bytecode"}
    sched = {"target": {"kind": "llvm", "opt-level": 2}, "pipeline": "scheduled", "passes": [],
             "exec_mode": "bytecode", "schedule_seed": schedule_seed}
    return Program([Function("main", [Param("x", t), Param("y", t)], [Block(True, [
        Node("v1", "relax.add", ["x", "y"], {}, t), Node("v2", "relax.exp", ["v1"], {}, t)])],
        "v2")], "main", {"mode": "valid", "seed": 0, "variants": [base, sched]})


def _text(prog: Program) -> str:
    from fuzz.materialize import materialize, to_script

    return to_script(materialize(prog))


def test_model_and_its_text_get_one_verdict_under_a_scheduled_variant():
    """Schedule seed 20 vectorizes the symbolic ``n`` loop, which VectorizeLoop refuses on
    x86: TVM's stated refusal. The model and its printed text are judged by the same loop,
    so both call it schedule noise (the text judge once had its own loop without that rule and
    filed the refusal as a crash)."""
    prog = _scheduled_program(20)
    by_model = cases.judge(cases.job(prog))
    by_text = cases.judge(cases.job(_text(prog), variants=prog.meta["variants"]))
    assert (by_model.verdict, by_model.kind) == ("rejected", "schedule_noise")
    assert (by_text.verdict, by_text.kind, by_text.message) == (
        by_model.verdict, by_model.kind, by_model.message)
    assert by_text.extra["schedule"] == by_model.extra["schedule"]


def test_each_kind_of_case_has_one_job_and_one_judge():
    from fuzz.generate import generate
    from fuzz.tir.generate import generate_tir

    relax_case, tir_case = generate(3), generate_tir(3)
    text = _text(relax_case)
    assert [cases.kind_of(v).name for v in (relax_case, tir_case, text)] == [
        "relax", "tir", "tvmscript"]
    from worker import jobs

    for value in (relax_case, tir_case, text):
        job = cases.job(value)
        assert cases.kind_of_job(job) is cases.kind_of(value)
        assert jobs.KINDS[job["kind"]] is jobs._judge   # the child judges it with the one job
    # a TIR case is judged by the TIR stages (it has a verify stage, Relax has well_formed)
    assert cases.judge(cases.job(tir_case)).extra["variant"]["pipeline"] in ("tir", "call_tir")


def test_the_sandbox_child_judges_what_the_parent_would():
    """The job a consumer sends is judged in the child by the same judge as in process."""
    from fuzz.generate import generate
    from worker.sandbox import Sandbox
    from worker.sandbox_runner import outcome_from_result

    prog = generate(5)
    here = cases.judge(cases.job(prog)).to_json()
    with Sandbox(timeout=120) as sb:
        there = outcome_from_result(sb.run(cases.job(prog)))
        text = outcome_from_result(sb.run(cases.job(_text(prog))))
    assert (there.verdict, there.kind, there.message) == (
        here["verdict"], here["kind"], here["message"])
    assert text.verdict in ("pass", "fail")


def test_unsafe_text_never_becomes_a_job():
    from worker.script_guard import UnsafeScript

    with pytest.raises(UnsafeScript):
        cases.job("import os\nos.system('true')\n")


def test_a_value_that_is_no_case_is_refused():
    with pytest.raises(TypeError, match="not a case"):
        cases.job(42)


def test_a_pinned_schedule_replays_its_steps_and_a_gone_step_is_no_finding():
    """A "scheduled" variant with recorded steps (the reducer's pin) applies exactly them;
    a step whose function is gone from a smaller candidate makes the case invalid, never a
    TVM bug."""
    prog = _scheduled_program(7)
    drawn = cases.judge(cases.job(prog))
    steps = drawn.extra["schedule"]
    assert steps
    prog.meta["variants"][1]["schedule_steps"] = steps
    pinned = cases.judge(cases.job(prog))
    assert (pinned.verdict, pinned.kind, pinned.message) == (
        drawn.verdict, drawn.kind, drawn.message)
    assert pinned.extra["schedule"] == steps
    prog.meta["variants"][1]["schedule_steps"] = [dict(steps[0], func="gone")]
    gone = cases.judge(cases.job(prog))
    assert (gone.verdict, gone.kind, gone.error_type) == ("invalid", "generator", "StepRefused")


def test_a_training_mode_op_is_not_compared_after_decompose_for_inference():
    """DecomposeOpsForInference decomposes ops "during inference" (its documentation): a
    batch_norm with training=True becomes the inference one by design, so its results are
    not compared with numpy's after that pass (campaign seed 90000 filed it as a wrong
    result, 02892e934f73). Without the pass the same case is compared and agrees."""
    import json
    from pathlib import Path

    prog = Program.from_json(json.loads(
        (Path(__file__).parent / "data" / "relax_batch_norm_training_decompose.json").read_text()))
    assert "DecomposeOpsForInference" in prog.meta["variants"][-1]["passes"]
    assert cases.judge(cases.job(prog)).verdict == "pass"
    plain = Program.from_json(json.loads(prog.dumps()))
    plain.meta["variants"][-1]["passes"].remove("DecomposeOpsForInference")
    assert cases.judge(cases.job(plain)).verdict == "pass"


def test_text_of_a_training_mode_op_is_not_compared_after_decompose_for_inference():
    """The same rule for a module's text (a user's file, a seeded mutant): with the
    DecomposeOpsForInference variant beside the plain build, the cross-variant comparison
    would call the decomposed batch_norm a wrong result."""
    import json
    from pathlib import Path

    from fuzz.materialize import materialize, to_script

    prog = Program.from_json(json.loads(
        (Path(__file__).parent / "data" / "relax_batch_norm_training_decompose.json").read_text()))
    text = to_script(materialize(prog))
    variants = [{"target": {"kind": "llvm"}, "pipeline": "default"},
                prog.meta["variants"][-1]]
    o = cases.judge(cases.job(text, variants=variants))
    assert o.verdict == "pass", o.to_json()


def test_a_wrong_result_that_reads_unwritten_memory_is_named_by_the_step_that_left_it():
    """The guidance bench filed an ONNX case (stack of cos and a scalar, then max) as wrong
    "after reorder": two loop_partitions of the stack leave elements unwritten, which a
    prefix of the schedule read right by chance (the pool handing back an earlier run's
    values), so a later reorder of another function was blamed. Prefixes now also run with
    malloc's blocks filled."""
    from pathlib import Path

    from worker.replay import load_job

    o = cases.judge(load_job(Path(__file__).parent / "data" /
                             "onnx_stack_loop_partition_uninit.json"))
    if o.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    assert o.kind == "numeric" and o.extra["reads_uninitialized"], o.to_json()
    assert o.extra["guilty_step"]["prim"] == "loop_partition"
    assert o.extra["numeric_key"].endswith("after loop_partition")
