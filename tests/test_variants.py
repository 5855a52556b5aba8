"""Compile variants and the oracles that depend on them, on the real TVM."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from worker.execute import compile_and_run
from worker.variants import BASE, Variant, random_passes, random_variant

PLUGINS = str(Path(__file__).resolve().parent / "plugins")


def small_program(op="relax.add", dtype="float32"):
    t = TensorTy([4, 8], dtype)
    node = Node("v1", op, ["a", "b"], {}, t)
    return Program([Function("main", [Param("a", t), Param("b", t)], [Block(True, [node])], "v1")],
                   "main", {"mode": "valid", "seed": 3})


@pytest.mark.parametrize("variant", [
    Variant({"kind": "llvm", "opt-level": 0}),
    Variant({"kind": "llvm", "opt-level": 3, "mcpu": "znver3"}),
    Variant({"kind": "c"}),
    Variant({"kind": "llvm"}, "target"),
    Variant({"kind": "llvm"}, "zero"),
    Variant({"kind": "llvm"}, "passes", ["LegalizeOps", "AnnotateTIROpPattern", "FuseOps",
                                         "FuseTIR", "DeadCodeElimination"]),
    Variant({"kind": "llvm"}, exec_mode="compiled"),
], ids=lambda v: v.label())
def test_each_variant_builds_runs_and_agrees(variant):
    o = compile_and_run(small_program(), [BASE, variant])
    assert o.verdict == "pass", o.to_json()


def test_cuda_compiles_without_a_gpu_to_device_code():
    from fuzz.materialize import materialize
    from worker.variants import build, cuda_source, nvcc_available, nvcc_compile

    v = Variant({"kind": "cuda", "arch": "sm_90"}, "target")
    ex = build(materialize(small_program()), v)
    src = cuda_source(ex)
    assert "__global__" in src, "the default GPU pipeline must emit a CUDA kernel, not host code"
    if nvcc_available():
        nvcc_compile(ex, v)      # raises when nvcc rejects the source
    o = compile_and_run(small_program(), [BASE, v])
    assert o.verdict == "pass", o.to_json()


def _has_gpu() -> bool:
    r = subprocess.run([sys.executable, "-c", "import tvm; print(tvm.cuda(0).exist)"],
                       capture_output=True, text=True, timeout=120)
    return r.stdout.strip() == "True"


@pytest.mark.skipif(not _has_gpu(), reason="no CUDA GPU on this machine")
def test_cuda_run_path_agrees_with_llvm():
    o = compile_and_run(small_program(), [BASE, Variant({"kind": "cuda", "arch": "sm_90"},
                                                        "target")])
    assert o.verdict == "pass", o.to_json()


def test_random_variants_are_deterministic_and_pass_orders_respect_prerequisites():
    from fuzz.choice import RandomChooser

    a = [random_variant(RandomChooser(7)).to_json() for _ in range(5)]
    b = [random_variant(RandomChooser(7)).to_json() for _ in range(5)]
    assert a == b
    for seed in range(30):
        ps = random_passes(RandomChooser(seed), 5)
        for later, earlier in [("FuseTIR", "FuseOps"), ("FuseOps", "AnnotateTIROpPattern")]:
            if later in ps:
                assert earlier in ps[:ps.index(later)]


def test_pass_watch_names_the_pass_that_left_ill_formed_ir():
    sys.path.insert(0, PLUGINS)
    try:
        v = Variant({"kind": "llvm"}, extra_passes=["tvmfuzz_planted:make_ill_formed"])
        o = compile_and_run(small_program(), [v])
    finally:
        sys.path.remove(PLUGINS)
    assert o.verdict == "fail"
    assert o.extra.get("failing_pass") == "PlantedIllFormed", o.to_json()


def test_cross_variant_numeric_oracle_catches_a_wrong_variant():
    # A near-valid program has no numpy reference: variants are compared with each other.
    # A planted pass that changes results (add -> subtract) must be caught that way.
    prog = small_program()
    prog.meta["mode"] = "near-valid"
    sys.path.insert(0, PLUGINS)
    try:
        o = compile_and_run(prog, [BASE, Variant({"kind": "llvm"},
                                                 extra_passes=["tvmfuzz_planted:add_to_sub"])])
    finally:
        sys.path.remove(PLUGINS)
    assert o.verdict == "fail" and o.kind == "numeric", o.to_json()
    assert "differs from llvm/default" in o.message


def _arange_then_add(step, near_valid=False):
    """arange(0, 0, step) plus a (2,) parameter: numpy's arange has no element for any step,
    yet TVM 0.27 infers 2 for step -1 (it rounds the length up as if the step were positive)."""
    f32 = TensorTy([0], "float32")
    nodes = [Node("r", "relax.arange", [], {"start": 0, "end": 0, "step": step,
                                             "dtype": "float32"}, f32),
             Node("s", "relax.add", ["r", "p"], {}, f32)]
    return Program([Function("main", [Param("p", f32)], [Block(True, nodes)], "s")], "main",
                   {"mode": "near-valid" if near_valid else "valid", "seed": 3})


def test_wrong_inferred_shape_is_a_finding_at_the_op_that_made_it():
    o = compile_and_run(_arange_then_add(-1)).to_json()
    assert (o["verdict"], o["kind"], o["stage"]) == ("fail", "shape_inference", "materialize")
    assert o["message"] == "relax.arange infers the wrong extent of dim 0: TVM 2, numpy 0"
    assert o["extra"]["op"] == "relax.arange" and o["extra"]["node"] == "r"
    # The same program with a positive step agrees with numpy: the check is not the finding.
    assert compile_and_run(_arange_then_add(1)).verdict == "pass"


def test_mutants_are_not_type_checked():
    o = compile_and_run(_arange_then_add(-1, near_valid=True)).to_json()
    assert o["kind"] != "shape_inference"


def test_type_disagreement_compares_what_both_sides_know():
    from fuzz.materialize import type_disagreement
    from fuzz.model import TupleTy

    t = TensorTy
    assert type_disagreement(t([2, 3], "int32"), t([2, 3], "int32")) == ""
    assert type_disagreement(t([2, "n"], "int32"), t([2, "m"], "int32")) == ""   # symbolic
    assert type_disagreement(t(None, "", -1), t([2, 3], "int32")) == ""        # unknown rule
    assert type_disagreement(t([2, 3], "int32"), t([2, 3], "int64")) == \
        "dtype: TVM int64, numpy int32"
    assert type_disagreement(t([2], "int32"), t([2, 1], "int32")) == "rank: TVM 2, numpy 1"
    assert type_disagreement(t([2, 0], "int32"), t([2, -1], "int32")) == \
        "extent of dim 1: TVM -1 (negative), numpy 0"
    assert type_disagreement(TupleTy([t([1], "int8"), t([4], "int8")]),
                             TupleTy([t([1], "int8"), t([3], "int8")])) == \
        "extent of dim 0: TVM 3, numpy 4 (tuple field 1)"
