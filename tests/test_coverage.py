"""Coverage cells (fuzz/coverage.py), their feedback into generation, and the campaign's record."""
import json

import pytest

from fuzz.coverage import Coverage, case_cells, load_coverage, shape_kind
from fuzz.generate import generate
from fuzz.model import Block, Function, Node, Param, Program, TensorTy, TupleTy
from fuzz.outcome import Outcome
from fuzz.tir.model import Block as TirBlock
from fuzz.tir.model import For, IterVar, Store, TirProgram


def _hand_made() -> Program:
    f32 = lambda shape: TensorTy(shape, "float32")  # noqa: E731
    params = [Param("p0", f32([2, 3])), Param("p1", TensorTy(["n", 3], "float16")),
              Param("p2", TensorTy(None, "float32", 2)), Param("p3", TensorTy(None, "int32"))]
    nodes = [
        Node("v1", "relax.add", ["p0", "p0"], {}, f32([2, 3])),
        Node("v2", "relax.exp", ["v1"], {}, f32([2, 3])),
        Node("v3", "relax.exp", ["p1"], {}, TensorTy(["n", 3], "float16")),
        Node("v4", "relax.split", ["v2"], {"indices_or_sections": 3, "axis": 1},
             TupleTy([f32([2, 1])] * 3)),
        Node("v5", "get_item", ["v4"], {"index": 0}, f32([2, 1])),
        Node("v6", "relax.negative", ["v5"], {}, f32([2, 1])),
        Node("v7", "relax.abs", ["p2"], {}, TensorTy(None, "float32", 2)),
        Node("v8", "relax.negative", ["p3"], {}, TensorTy(None, "int32")),
        Node("v9", "tuple", ["v3", "v6", "v7", "v8"], {}, None),
    ]
    prog = Program([Function("main", params, [Block(True, nodes)], "v9")], "main", {})
    prog.meta["variants"] = [{"target": {"kind": "llvm"}, "pipeline": "default", "passes": []},
                             {"target": {"kind": "llvm"}, "pipeline": "passes",
                              "passes": ["FoldConstant", "DeadCodeElimination"]}]
    return prog


def test_cells_of_a_hand_made_program():
    prog = _hand_made()
    steps = [{"func": "add", "prim": "split", "block": "T_add", "loop": 0},
             {"func": "exp", "prim": "compute_inline", "block": "compute_1"}]
    cells = case_cells(prog, Outcome("pass", extra={"schedule": steps}))
    assert cells["op_dtype_shape"] == {
        "relax.add|float32|static", "relax.exp|float32|static", "relax.exp|float16|symbolic",
        "relax.split|float32|static", "relax.negative|float32|static",
        "relax.abs|float32|ndim", "relax.negative|int32|unknown"}
    # get_item passes split's result on; parameters and the tuple make no edges
    assert cells["edge"] == {"relax.add->relax.exp", "relax.exp->relax.split",
                             "relax.split->relax.negative"}
    ops = {"relax.add", "relax.exp", "relax.split", "relax.negative", "relax.abs"}
    assert cells["pass_op"] == {f"{p}|{op}" for op in ops for p in (
        "pipeline:default", "FoldConstant", "DeadCodeElimination")}
    assert cells["prim_block"] == {"split|legalized:T_add", "compute_inline|legalized:compute"}
    assert case_cells(prog)["prim_block"] == set()   # no outcome: no schedule


def test_shape_kinds():
    assert shape_kind(TensorTy([1, 2], "float32")) == "static"
    assert shape_kind(TensorTy(["n * 4", 2], "float32")) == "symbolic"
    assert shape_kind(TensorTy(None, "float32", 3)) == "ndim"
    assert shape_kind(TensorTy(None, "float32")) == "unknown"
    assert shape_kind(TupleTy([TensorTy([1], "int8"), TensorTy(["m"], "int8")])) == "symbolic"


def test_tir_blocks_have_their_iteration_shape():
    body = [For("i", 4, "serial", [For("k", 4, "serial", [TirBlock(
        "C", [IterVar("vi", "S", 4, "i"), IterVar("vk", "R", 4, "k")], [Store("C", ["vi"], 0.0)], [])])])]
    prog = TirProgram("f", [], body, {})
    steps = [{"prim": "split", "block": "C"}, {"prim": "cache_read", "block": "C_local"}]
    cells = case_cells(prog, Outcome("pass", extra={"schedule": steps}))
    assert cells["prim_block"] == {"split|SR+init", "cache_read|derived"}
    assert cells["op_dtype_shape"] == set() and cells["pass_op"] == set()


def _totals(guided: bool, n: int) -> dict:
    cov = Coverage()
    for seed in range(n):
        cov.add_case(generate(seed, guide=cov.current if guided else None))
        if seed % 8 == 7:   # as a campaign does after each batch
            cov.refresh()
    return cov.totals()


def test_guidance_covers_more_cells_and_edges():
    """Same seeds, generation alone: favouring what is not covered yet must reach more
    distinct op x dtype x shape cells and op->op edges (measured over seeds 0-599: 1122 vs
    1040 cells, 1243 vs 1085 edges)."""
    guided, unguided = _totals(True, 600), _totals(False, 600)
    assert guided["op_dtype_shape"] >= unguided["op_dtype_shape"] * 1.04, (guided, unguided)
    assert guided["edge"] >= unguided["edge"] * 1.06, (guided, unguided)


def test_guidance_off_is_todays_generation():
    """No guide: the same draws with the same weights as before coverage existed, so a seed
    still names its program; a guide changes the programs and marks them."""
    from worker.campaign import make_case

    for seed in range(40):
        plain = generate(seed)
        assert "guided" not in plain.meta
        assert make_case(seed, "valid").dumps() == make_case(seed, "valid", guide=None).dumps()
        assert make_case(seed, "valid").to_json()["functions"] == plain.to_json()["functions"]
    cov = Coverage()
    for seed in range(200):
        cov.add_case(generate(seed))
    guide = cov.refresh()
    guided = [generate(s, guide=guide) for s in range(40)]
    assert all(p.meta.get("guided") for p in guided)
    assert sum(p.to_json()["functions"] != generate(s).to_json()["functions"]
               for s, p in enumerate(guided)) >= 20
    # the JSON is the whole case: it loads back to the same program
    assert all(Program.loads(p.dumps()).dumps() == p.dumps() for p in guided)


def test_coverage_saves_and_loads(tmp_path):
    cov = Coverage()
    cov.add_case(_hand_made(), Outcome("pass", extra={"schedule": [
        {"prim": "split", "block": "T_add"}]}))
    cov.add_case(_hand_made())
    (tmp_path / "coverage.json").write_text(json.dumps(cov.to_json()))
    back = load_coverage(tmp_path)
    assert back.totals() == cov.totals() == {"op_dtype_shape": 7, "edge": 3, "pass_op": 15,
                                             "prim_block": 1, "tvm_python": 0}
    assert back.counts["edge"]["relax.add->relax.exp"] == 2
    assert load_coverage(tmp_path / "none").totals()["edge"] == 0


def test_coverage_counts_findings_per_cell(tmp_path):
    """A failing case adds its op x dtype x shape, pass x op and primitive x block cells to
    ``findings`` as well; passing and invalid cases only to the counts. Saved and loaded."""
    steps = [{"prim": "split", "block": "T_add"}]
    cov = Coverage()
    cov.add_case(_hand_made(), Outcome("fail", kind="crash", extra={"schedule": steps}))
    cov.add_case(_hand_made(), Outcome("pass", extra={"schedule": steps}))
    cov.add_case(_hand_made(), Outcome("invalid"))
    saved = cov.to_json()
    cells = case_cells(_hand_made(), Outcome("fail", extra={"schedule": steps}))
    for k in ("op_dtype_shape", "pass_op", "prim_block"):
        assert saved["findings"][k] == {c: 1 for c in cells[k]}, k
    assert saved["cells"]["op_dtype_shape"]["relax.add|float32|static"] == 3
    assert saved["cells"]["prim_block"]["split|legalized:T_add"] == 2
    assert set(saved["findings"]) == {"op_dtype_shape", "pass_op", "prim_block"}
    (tmp_path / "coverage.json").write_text(json.dumps(saved))
    back = load_coverage(tmp_path)
    assert back.to_json() == saved
    # a coverage.json from before findings were counted loads with none
    old = {"totals": saved["totals"], "cells": saved["cells"]}
    assert Coverage.from_json(old).to_json()["findings"] == {
        "op_dtype_shape": {}, "pass_op": {}, "prim_block": {}}


def test_sandbox_traces_tvm_python_functions_only_when_asked(monkeypatch):
    """With TVMFUZZ_PY_COVERAGE=1 the sandbox child reports the TVM Python functions a case
    ran (the Relax op constructors and legalizers of its ops among them); without, nothing."""
    from worker.pycoverage import ENV
    from worker.sandbox import Sandbox

    prog = _hand_made()
    prog.meta["variants"] = None
    job = {"kind": "case", "program": prog.to_json(), "input_seed": 0}
    monkeypatch.delenv(ENV, raising=False)
    off = Sandbox()
    monkeypatch.setenv(ENV, "1")
    on = Sandbox()
    try:
        r_off, r_on = off.run_many([job])[0], on.run_many([job])[0]
    finally:
        off.close()
        on.close()
    assert "tvm_python" not in r_off["result"]["extra"]
    ran = r_on["result"]["extra"]["tvm_python"]
    assert r_on["result"]["verdict"] == r_off["result"]["verdict"]
    assert any(f.startswith("relax/op/") and f.endswith(":exp") for f in ran), ran[:20]
    assert any("legalize_ops" in f for f in ran)
    assert not any(f.startswith(("/", "..")) for f in ran)   # only TVM's own files
    cells = case_cells(prog, Outcome.from_json(r_on["result"]))["tvm_python"]
    assert cells == set(ran)


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--guidance", "--no-guidance"])
def test_campaign_records_coverage(tmp_path, flag):
    from tvmfuzz.cli import main

    out = tmp_path / "run"
    assert main(["run", "--time", "15s", "--out", str(out), "--ir", "relax", "--no-reduce",
                 "--corpus", str(tmp_path / "corpus"), flag]) == 0
    summary = json.loads((out / "summary.json").read_text())
    saved = json.loads((out / "coverage.json").read_text())
    assert summary["coverage"] == saved["totals"]
    assert saved["totals"]["op_dtype_shape"] > 0 and saved["totals"]["pass_op"] > 0
    cases = [json.loads(p.read_text()) for p in (out / "findings").rglob("case_*.json")
             if not p.name.endswith(".outcome.json")]
    assert all(bool(c["meta"].get("guided")) == (flag == "--guidance") for c in cases)
    assert json.loads((out / "campaign.json").read_text())["guidance"] == (flag == "--guidance")


def test_guided_onnx_cases_have_a_form_wherever_unguided_ones_do():
    """The guide favours (op, dtype) cells no case covered, many of which ONNX cannot express
    (asin on float64, conv1d on int8): a campaign whose ONNX draws were all guided had 12 of
    129 ONNX cases with no form, about four times the unguided share. A guided seed now falls
    back on its unguided draws, so it has no form only where those have none."""
    from fuzz.onnx_export import exportable
    from worker.campaign import make_onnx_case

    cov = Coverage()
    for seed in range(300):
        cov.add_case(generate(seed))
    guide = cov.refresh()

    def formless(g):
        out = set()
        for seed in range(700000, 700150):
            p = make_onnx_case(seed, guide=g)
            if exportable(p, p.meta["onnx"]["opset"]) is not None:
                out.add(seed)
        return out

    guided, unguided = formless(guide), formless(None)
    assert guided <= unguided, (sorted(guided), sorted(unguided))
    guided_share = sum(bool(make_onnx_case(s, guide=guide).meta.get("guided"))
                       for s in range(700000, 700060))
    assert guided_share >= 30   # most ONNX cases are still steered
