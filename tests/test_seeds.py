"""Seeds (`tvmfuzz run --seeds`): IR mutations of TVMScript seeds (worker/seed_mutate.py),
program-model seeds grown by the generator (fuzz/grow.py), the seeded case kind, the default
seed set, and a seeded campaign storing its findings as the corpus does."""
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.generate import generate
from fuzz.grow import grow, problems
from fuzz.model import Program
from fuzz.retype import retype
from fuzz.seeded import SeededCase
from worker.seeds import DEFAULT_DIR, SeedError, freeze_mutant, load_seeds, seeded_case

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])}

# Fits every mutation: a 4-d float value with a small channel dim, unary and binary ops.
SMALL = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 3), "float32"), y: R.Tensor((1, 2, 3, 3), "float32")
             ) -> R.Tensor((1, 2, 3, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.tanh(a)
            R.output(b)
        return b
'''
# A ToMixedPrecision crash the seeded campaign found (reduced): a tuple of one value twice.
TUPLE_TWICE = '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((1, 1), dtype="float32")) -> R.Tensor((1, 1), dtype="float32"):
        with R.dataflow():
            t: R.Tuple(R.Tensor((1, 1), dtype="float32"), R.Tensor((1, 1), dtype="float32")) = x, x
            y: R.Tensor((1, 1), dtype="float32") = t[0]
            R.output(y)
        return y
'''
EVIL = '''
@I.ir_module
class Module:
    @T.prim_func
    def f():
        T.evaluate(T.external_kernel.os.system("touch /tmp/pwned"))
'''


def _parse(text):
    import tvm

    return tvm.script.from_source(text)


@pytest.fixture(scope="module")
def small():
    return _parse(SMALL)


def _mutations():
    from worker.seed_mutate import MUTATIONS

    return sorted(MUTATIONS)


@pytest.mark.parametrize("name", _mutations())
def test_each_ir_mutation_keeps_the_module_well_formed_and_typed(small, name):
    import tvm
    import tvm_ffi
    from tvm import relax

    from fuzz.materialize import to_script
    from worker.seed_mutate import MUTATIONS

    mod, what = MUTATIONS[name](small, random.Random(3))
    assert what.startswith(name)
    assert relax.analysis.well_formed(mod) is not False
    assert not tvm_ffi.structural_equal(mod, small)                       # it changed
    assert tvm_ffi.structural_equal(mod["main"].ret_ty, small["main"].ret_ty)   # same type
    again = _parse(to_script(mod))                                       # prints and parses
    tvm.ir.assert_structural_equal(again, mod, map_free_vars=True)


def test_a_mutation_with_no_fitting_value_is_skipped():
    from worker.seed_mutate import Skip, fuse_conv

    mod = _parse(SMALL.replace("(1, 2, 3, 3)", "(2, 3)"))
    with pytest.raises(Skip):
        fuse_conv(mod, random.Random(0))


def test_mutation_is_deterministic_from_the_seed(small):
    from fuzz.materialize import to_script
    from worker.seed_mutate import mutate

    a, applied_a = mutate(small, 5, 3)
    b, applied_b = mutate(small, 5, 3)
    assert applied_a == applied_b and len(applied_a) == 3
    assert to_script(a) == to_script(b)
    c, applied_c = mutate(small, 6, 3)
    assert applied_c != applied_a or to_script(c) != to_script(a)


def test_json_seeds_grow_into_valid_programs_deterministically():
    kinds = set()
    for s in range(40):
        seed = generate(s)
        before = problems(seed.copy())
        m = grow(seed, 100 + s)
        assert m.dumps() == grow(seed, 100 + s).dumps()
        retype(m.copy())                               # well typed by the shape rules
        assert problems(m.copy()) <= before            # no new range or domain problem
        assert "mutations" not in m.meta               # never read as a near-valid mutant
        kinds.update(w.split(":")[0] for w in m.meta["seed_mutations"])
    assert {"extend", "insert", "replace"} <= kinds


def test_grown_programs_build_and_run_valid():
    from worker.execute import compile_and_run

    verdicts = [compile_and_run(grow(generate(s), 7 + s)).verdict for s in range(6)]
    assert "invalid" not in verdicts, verdicts


def test_seeded_case_round_trips_as_a_case():
    case = SeededCase(SMALL, "small.py", 2, meta={"seed": 4, "variants": []})
    back = Program.loads(case.dumps())
    assert isinstance(back, SeededCase) and back.dumps() == case.dumps()
    assert back.ir == "seeded" and back.text == SMALL


def test_seeds_directory_skips_unsafe_and_broken_files(tmp_path):
    (tmp_path / "evil.py").write_text(EVIL)
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "good.py").write_text(SMALL)
    generate_case = generate(3)
    (tmp_path / "case.json").write_text(generate_case.dumps())
    notes = []
    seeds = load_seeds(str(tmp_path), note=notes.append)
    assert [s.name for s in seeds] == ["case.json", "good.py"]
    assert len(notes) == 3 and all("\n" not in n and n.startswith("seed ") for n in notes)
    assert any("evil.py" in n for n in notes)
    with pytest.raises(SeedError):
        load_seeds(str(tmp_path / "missing"))
    (tmp_path / "none").mkdir()
    with pytest.raises(SeedError):
        load_seeds(str(tmp_path / "none"))


@pytest.mark.parametrize("args", [["--seeds", "/nonexistent/seeds"], ["--seeds", "EMPTY"]])
def test_run_with_unusable_seeds_is_one_line(tmp_path, args):
    (tmp_path / "empty").mkdir()
    args = [str(tmp_path / "empty") if a == "EMPTY" else a for a in args]
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "run", "--time", "1", "--out",
                        str(tmp_path / "out"), "--corpus", str(tmp_path / "c"), *args],
                       capture_output=True, text=True, timeout=120, env=ENV)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "--seeds" in lines[0], r.stderr


def test_default_seed_set_loads_whole_and_replays_clean():
    """Every shipped seed passes the guard and judges `pass` (what `tvmfuzz replay` does:
    the file's text as a tvmscript job, in the sandbox)."""
    from worker import cases
    from worker.sandbox_runner import SandboxRunner

    notes = []
    seeds = load_seeds("default", note=notes.append)
    assert not notes and 15 <= len(seeds) <= 30
    assert all(s.kind == "script" for s in seeds)
    runner = SandboxRunner()
    try:
        outs = [runner.sandbox.run(cases.job(s.value)) for s in seeds]
    finally:
        runner.close()
    from worker.sandbox_runner import outcome_from_result

    bad = [(s.name, o.verdict, o.message) for s, o in
           zip(seeds, map(outcome_from_result, outs)) if o.verdict != "pass"]
    assert not bad


def test_replay_cli_passes_a_default_seed(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "replay", "--times", "1",
                        str(DEFAULT_DIR / "mlp_block.py")], capture_output=True, text=True,
                       timeout=300, env=ENV, cwd=tmp_path)
    assert r.returncode == 0 and "verdict: pass" in r.stdout, r.stdout + r.stderr


def test_seeded_cases_judge_and_freeze_to_their_mutant():
    from worker import cases

    seeds = load_seeds("default")
    case = seeded_case(19, seeds)   # reshape_transpose.py: a ToMixedPrecision crash (0.27)
    assert isinstance(case, SeededCase) and case.seed_name == "reshape_transpose.py"
    o = cases.judge(cases.job(case))
    assert o.extra["seed_mutations"]
    if o.verdict == "pass":
        pytest.skip("the TVM under test no longer fails on this mutant")
    freeze_mutant(case, o)
    assert case.mutant == o.extra["mutant"]
    again = cases.judge(cases.job(Program.loads(case.dumps())))   # the frozen mutant
    assert again.signature == o.signature


def test_a_program_model_seed_gives_relax_cases(tmp_path):
    (tmp_path / "case.json").write_text(generate(11).dumps())
    seeds = load_seeds(str(tmp_path))
    prog = seeded_case(2, seeds)
    assert prog.ir == "relax" and prog.meta["seed_name"] == "case.json"
    assert len(prog.meta["variants"]) == 2 and prog.meta["variants"][1]["pipeline"] == "passes"


@pytest.mark.slow
def test_run_seeds_stores_findings_as_the_corpus_does(tmp_path):
    """About 40 s: a seeded campaign (seeds 16.. include the ToMixedPrecision mutant)."""
    from corpus import Corpus

    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "run", "--seeds", "default", "--ir",
                        "seeded", "--time", "25s", "--seed", "16", "--out", str(out),
                        "--corpus", str(tmp_path / "corpus"), "--no-reduce", "--replays", "1",
                        "--no-live"], capture_output=True, text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] >= 8 and summary["cases_by_ir"].get("seeded", 0) >= 8
    saved = sorted((out / "findings").glob("*/case_*[0-9].json"))
    assert saved, r.stdout
    for f in saved:
        case = Program.loads(f.read_text())
        assert case.ir == "seeded" and case.mutant      # frozen to the module that failed
        assert f.with_suffix(".py").read_text() == case.mutant
    store = Corpus(tmp_path / "corpus")
    try:
        buckets = store.buckets()
        assert buckets
        for b in buckets:
            rep = store.case(b["representative"])
            assert rep.ir == "seeded" and rep.mutant
    finally:
        store.close()


def test_a_frozen_seeded_finding_reduces_as_text_and_repro_reproduces(tmp_path):
    from reducer.api import reduce_case

    case = SeededCase(TUPLE_TWICE, "t.py", 1, mutant=TUPLE_TWICE, meta={
        "seed": 0, "variants": [{"target": {"kind": "llvm"}},
                                {"target": {"kind": "llvm"}, "pipeline": "passes",
                                 "passes": ["ToMixedPrecision"]}]})
    red = reduce_case(case, out_dir=tmp_path / "red", time_budget=60)
    if red.outcome.verdict == "pass":
        pytest.skip("fixed in the TVM under test")
    assert red.kind == "script" and "ToMixedPrecision" in red.signature
    r = subprocess.run([sys.executable, str(tmp_path / "red" / "repro.py")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr


def test_campaign_mix_follows_ir():
    from worker.campaign import make_case

    seeds = load_seeds("default")
    mixed = [make_case(s, None, ir=("relax", "tir", "seeded"), seeds=seeds).ir
             for s in range(200)]
    assert 70 <= mixed.count("seeded") <= 130 and {"relax", "tir"} <= set(mixed)
    assert {make_case(s, None, ir=("seeded",), seeds=seeds).ir for s in range(20)} == {"seeded"}
    assert "seeded" not in {make_case(s, None, ir=("relax", "tir"), seeds=seeds).ir
                            for s in range(40)}
    a, b = (make_case(7, None, ir=("seeded",), seeds=seeds) for _ in range(2))
    assert a.dumps() == b.dumps()                         # deterministic from the case seed


def test_report_of_a_frozen_seeded_case(tmp_path):
    case = SeededCase(TUPLE_TWICE, "t.py", 1, mutant=TUPLE_TWICE, meta={
        "seed": 0, "variants": [{"target": {"kind": "llvm"}},
                                {"target": {"kind": "llvm"}, "pipeline": "passes",
                                 "passes": ["ToMixedPrecision"]}]})
    (tmp_path / "case.json").write_text(case.dumps())
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "report", str(tmp_path / "case.json"),
                        "--out", str(tmp_path / "rep"), "--no-jail"], capture_output=True,
                       text=True, timeout=300, env=ENV)
    if r.returncode and "does not fail" in r.stderr:
        pytest.skip("fixed in the TVM under test")
    assert r.returncode == 0, r.stderr
    assert "ToMixedPrecision" in (tmp_path / "rep" / "report.md").read_text()
    assert (tmp_path / "rep" / "repro.py").exists()
