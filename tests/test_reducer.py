"""Reducing program-model cases with real TVM in the real sandbox: the result keeps the
signature and is minimal, repro.py reproduces in a fresh process, slippage is kept, and bad
inputs are refused with a clear message without losing anything already written."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfuzz.cli import main
from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from reducer.api import reduce_case
from fuzz.retype import retype

F32, F16 = TensorTy([4, 8], "float32"), TensorTy([4, 8], "float16")
COSH = "unknown intrinsic Op(tirx.cosh)"


def _prog(nodes, params, ret):
    return retype(Program([Function("main", params, [Block(True, nodes)], ret)], "main",
                          {"mode": "valid", "seed": 7, "variants": [
                              {"target": {"kind": "llvm"}, "pipeline": "default",
                               "passes": [], "exec_mode": "bytecode"},
                              {"target": {"kind": "llvm", "opt-level": 2}, "pipeline": "passes",
                               "passes": ["LegalizeOps", "FoldConstant"],
                               "exec_mode": "bytecode"}]}))


def cosh_case():
    """Noise around a float16 cosh, which llvm cannot lower on 0.27."""
    nodes = [Node("a", "relax.add", ["x", "y"]), Node("b", "relax.multiply", ["a", "x"]),
             Node("h1", "relax.abs", ["h"]), Node("h2", "relax.add", ["h1", "h1"]),
             Node("c", "relax.cosh", ["h2"]),
             Node("c32", "relax.astype", ["c"], {"dtype": "float32"}),
             Node("d", "relax.add", ["b", "c32"]), Node("e", "relax.tanh", ["d"]),
             Node("t", "tuple", ["e", "a"])]
    return _prog(nodes, [Param("x", F32), Param("y", F32), Param("h", F16)], "t")


def passing_case():
    return _prog([Node("a", "relax.add", ["x", "y"])], [Param("x", F32), Param("y", F32)], "a")


def fresh_run(repro: Path) -> subprocess.CompletedProcess:
    """repro.py alone, outside the repository: only TVM and numpy importable."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(repro)], cwd=repro.parent, env=env,
                          capture_output=True, text=True, timeout=300)


def cli(argv, capsys):
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out + out.err


def test_reduces_to_the_crashing_op_and_repro_reproduces(tmp_path):
    red = reduce_case(cosh_case(), out_dir=tmp_path / "r")
    assert COSH in red.signature
    ops = [n.op for f in red.reduced.functions for n in f.nodes()]
    assert ops == ["relax.cosh"]
    assert len(red.reduced.main.params) == 1
    assert len(red.reduced.meta["variants"]) == 1          # the one failing build is enough
    assert red.outcome.signature == red.signature
    assert red.outcome.reproduction == {"reproduced": 3, "replays": 3}
    st = red.stats
    assert st["bindings_before"] == 9 and st["bindings_after"] == 1
    assert 0 < st["oracle_calls"] < 40
    out = tmp_path / "r"
    for f in ("case.json", "case.py", "repro.py", "report.md", "reduce.json"):
        assert (out / f).exists(), f
    assert Program.loads((out / "case.json").read_text()).dumps() == red.reduced.dumps()
    report = (out / "report.md").read_text()
    # float16 cosh is in fuzz/catalogue/known_bugs.py: the report says so, not "[Bug]"
    assert report.startswith("# [Known bug][Relax]") and "tirx.cosh" in report.splitlines()[0]
    assert "**Status: known.** fuzz/catalogue/known_bugs.py (relax.acos" in report
    for part in ("apache-tvm", "apache-tvm-ffi", "pipeline", "Steps to reproduce",
                 "R.cosh", "codegen_llvm.cc", "seed 7", "python repro.py"):
        assert part in report, part
    local = tmp_path / "fresh" / "repro.py"
    local.parent.mkdir()
    local.write_text((out / "repro.py").read_text())
    r = fresh_run(local)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "BUG REPRODUCED" in r.stdout


def test_slippage_onto_another_bug_is_kept_not_accepted(tmp_path):
    """cosh and acosh both fail on float16, with different signatures: while reducing the
    acosh failure, a candidate left with only cosh fails differently. It is never accepted,
    and it is saved as a new finding."""
    from reducer.oracle import CaseSubject, Oracle
    from reducer.pool import SandboxPool

    both = _prog([Node("c", "relax.cosh", ["h"]), Node("s", "relax.acosh", ["h"]),
                  Node("t", "tuple", ["s", "c"])], [Param("h", F16)], "t")
    cosh_only = _prog([Node("c", "relax.cosh", ["h"])], [Param("h", F16)], "c")
    with SandboxPool(1, 60) as pool:
        oracle = Oracle(CaseSubject(), pool, slippage_dir=tmp_path / "slippage")
        oracle.target_sig = oracle.run([both])[0].signature
        assert "acosh" in oracle.target_sig
        assert oracle.test([cosh_only, cosh_only]) == [False, False]
    assert oracle.stats["slippage"] == 1 and oracle.stats["calls"] == 1   # cached
    (sig, where), = oracle.slipped.items()
    assert "tirx.cosh" in sig
    d = Path(where)
    assert d.parent == tmp_path / "slippage"
    assert json.loads((d / "outcome.json").read_text())["signature"] == sig
    assert Program.loads((d / "case.json").read_text()).dumps() == cosh_only.dumps()


def test_a_candidate_of_the_same_signature_and_another_root_cause_is_not_kept():
    """A new bug must not shrink into a known bug's case with the same message: the oracle
    keeps a candidate only when its failure belongs to the original's root cause
    (``fuzz.triage.root_key``), as the corpus buckets it."""
    from reducer.oracle import CaseSubject, Oracle
    from reducer.pool import SandboxPool

    cosh = _prog([Node("c", "relax.cosh", ["h"])], [Param("h", F16)], "c")
    subject = CaseSubject()
    with SandboxPool(1, 60) as pool:
        oracle = Oracle(subject, pool)
        first = oracle.run([cosh])[0]
        oracle.target_sig = first.signature
        root = subject.root(cosh, first)
        assert root.startswith("known | fuzz/catalogue/known_bugs.py"), root
        oracle.target_root = "some other bug | " + first.signature
        assert oracle.test([cosh]) == [False]
        assert oracle.stats["root_slippage"] == 1 and oracle.stats["slippage"] == 0
        oracle.cache.clear()
        oracle.target_root = root
        assert oracle.test([cosh]) == [True]


def test_interesting_command(tmp_path, capsys):
    """C-Reduce style: the test is a command given the candidate's path; exit 0 = keep."""
    case = tmp_path / "case.json"
    case.write_text(cosh_case().dumps())
    test = tmp_path / "has_cosh.py"
    test.write_text("import json, sys\nd = json.load(open(sys.argv[1]))\n"
                    "ops = [n['op'] for f in d['functions'] for b in f['blocks'] "
                    "for n in b['nodes']]\nsys.exit(0 if 'relax.cosh' in ops else 1)\n")
    rc, out = cli(["reduce", str(case), "--interesting", f"{sys.executable} {test}",
                   "--out", str(tmp_path / "out")], capsys)
    assert rc == 0, out
    reduced = Program.loads((tmp_path / "out" / "case.json").read_text())
    assert [n.op for n in reduced.main.nodes()] == ["relax.cosh"]


def test_flaky_interesting_command_is_refused(tmp_path, capsys):
    case = tmp_path / "case.json"
    case.write_text(cosh_case().dumps())
    flip = tmp_path / "flip.py"   # interesting every other run
    flip.write_text(f"import os, sys\np = {str(tmp_path / 'n')!r}\n"
                    "n = int(open(p).read()) if os.path.exists(p) else 0\n"
                    "open(p, 'w').write(str(n + 1))\nsys.exit(n % 2)\n")
    rc, out = cli(["reduce", str(case), "--interesting", f"{sys.executable} {flip}",
                   "--out", str(tmp_path / "out")], capsys)
    assert rc == 1 and "only sometimes" in out


def test_bad_inputs_are_refused_clearly(tmp_path, capsys):
    ok = tmp_path / "pass.json"
    ok.write_text(passing_case().dumps())
    rc, out = cli(["reduce", str(ok), "--out", str(tmp_path / "o1")], capsys)
    assert rc == 1 and "does not fail" in out
    notes = tmp_path / "notes.txt"
    notes.write_text("hello, I am not TVMScript\n")
    # Input that is not a case or a module: a usage error (exit 2) before anything runs.
    rc, out = cli(["reduce", str(notes), "--out", str(tmp_path / "o2")], capsys)
    assert rc == 2 and "not TVMScript" in out
    plain = tmp_path / "plain.py"
    plain.write_text("x = 1\n")    # Python inside the allowlist, but no module to parse
    rc, out = cli(["reduce", str(plain), "--out", str(tmp_path / "o3")], capsys)
    assert rc == 2 and "not TVMScript" in out
    bad = tmp_path / "bad.json"
    bad.write_text("{\"schema\": 99}")
    rc, out = cli(["reduce", str(bad)], capsys)
    assert rc == 2 and "not a tvmfuzz case" in out
    rc, out = cli(["report", str(ok), "--out", str(tmp_path / "o4")], capsys)
    assert rc == 1 and "does not fail" in out


def test_code_in_an_annotation_is_refused_before_any_parse(tmp_path, capsys):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.py"
    evil.write_text(
        "from tvm.script import ir as I\nfrom tvm.script import relax as R\n\n"
        "@I.ir_module\nclass Module:\n    @R.function\n"
        f"    def main(x: R.Tensor(__import__('os').system('touch {marker}'))):\n"
        "        return x\n")
    for cmd in ("reduce", "report"):
        rc, out = cli([cmd, str(evil), "--out", str(tmp_path / cmd)], capsys)
        assert rc == 2 and "refused" in out and "nothing in it was run" in out
    assert not marker.exists()


def test_existing_output_is_never_lost(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "case.json").write_text("an earlier result")
    case = tmp_path / "case.json"
    case.write_text(cosh_case().dumps())
    rc, text = cli(["reduce", str(case), "--out", str(out), "--time", "1s"], capsys)
    assert rc == 0, text
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "case.json.~1~").read_text() == "an earlier result"
    Program.loads((out / "case.json").read_text())   # the smallest candidate so far
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_report_for_a_case_as_it_is(tmp_path, capsys):
    case = tmp_path / "c.json"
    case.write_text(cosh_case().dumps())
    rc, out = cli(["report", str(case), "--out", str(tmp_path / "rep")], capsys)
    assert rc == 0, out
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "tirx.cosh" in report.splitlines()[0] and "R.tanh" in report
    assert fresh_run(tmp_path / "rep" / "repro.py").returncode == 1


def test_a_corpus_bucket_is_reduced_by_its_id(tmp_path, capsys):
    from corpus import Corpus

    prog = cosh_case()
    outcome = {"verdict": "fail", "kind": "crash", "stage": "build",
               "error_type": "InternalError", "message": "unknown intrinsic Op(tirx.cosh)",
               "throw_site": "", "extra": {}}
    with Corpus(tmp_path / "corpus") as c:
        bid, _ = c.add_finding(prog, outcome)
    rc, out = cli(["reduce", bid[:8], "--corpus", str(tmp_path / "corpus"),
                   "--out", str(tmp_path / "out")], capsys)
    assert rc == 0, out
    reduced = Program.loads((tmp_path / "out" / "case.json").read_text())
    assert [n.op for n in reduced.main.nodes()] == ["relax.cosh"]
    rc, out = cli(["reduce", "0123456789ab", "--corpus", str(tmp_path / "corpus")], capsys)
    assert rc == 2 and "no such file" in out


def test_a_given_signature_must_be_the_one_the_input_fails_with(tmp_path, capsys):
    case = tmp_path / "case.json"
    case.write_text(cosh_case().dumps())
    rc, out = cli(["reduce", str(case), "--signature", "crash | run | Nope",
                   "--out", str(tmp_path / "o")], capsys)
    assert rc == 1 and "fails with another signature" in out
    rc, out = cli(["reduce", str(case), "--signature", "x", "--interesting", "true"], capsys)
    assert rc == 2 and "exclude each other" in out


def arange_case():
    """An arange with a negative step feeding a broadcast: TVM 0.27 infers 23 elements where
    numpy gives 21, so the equal's construction fails, which once read as a generator defect.
    Generator v1's seed 195, kept as data (v2 draws another program from that seed)."""
    import json

    path = Path(__file__).parent / "data" / "relax_arange_negative_step.json"
    return Program.from_json(json.loads(path.read_text()))


def test_shape_inference_finding_reduces_to_the_op_and_repro_checks_the_type(tmp_path):
    red = reduce_case(arange_case(), out_dir=tmp_path / "r")
    assert red.signature.startswith("shape_inference | materialize | InferenceMismatch | "
                                    "relax.arange infers the wrong extent of dim N")
    nodes = [n for f in red.reduced.functions for n in f.nodes()]
    assert [n.op for n in nodes] == ["relax.arange"]
    assert nodes[0].attrs["step"] < 0
    report = (tmp_path / "r" / "report.md").read_text()
    assert report.splitlines()[0].startswith(
        "# [Known bug][Relax] Shape inference: relax.arange infers the wrong extent of dim 0: "
        "TVM ")   # an entry of fuzz/catalogue/known_bugs.py
    local = tmp_path / "fresh" / "repro.py"
    local.parent.mkdir()
    local.write_text((tmp_path / "r" / "repro.py").read_text())
    r = fresh_run(local)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "relax.arange infers the wrong extent of dim 0" in r.stdout


def _arange_in_callee(consumer: bool):
    """arange(0, 0, -1) in a private function (TVM infers 2 elements, numpy none); with
    ``consumer`` an add of a (0,) tensor follows, which TVM then refuses to build."""
    f32 = TensorTy([0], "float32")
    nodes = [Node("r", "relax.arange", [], {"start": 0, "end": 0, "step": -1,
                                             "dtype": "float32"}, f32)]
    if consumer:
        nodes.append(Node("s", "relax.add", ["r", "q"], {}, f32))
    callee = Function("f1", [Param("q", f32)], [Block(True, nodes)], nodes[-1].name)
    main = Function("main", [Param("p", f32)],
                    [Block(False, [Node("c", "call", ["p"], {"func": "f1"}, f32)])], "c")
    return Program([callee, main], "main", {"mode": "valid", "seed": 3})


def test_shape_inference_report_finds_the_binding_in_its_function(tmp_path, capsys):
    case = tmp_path / "c.json"
    case.write_text(_arange_in_callee(consumer=False).dumps())
    rc, out = cli(["report", str(case), "--out", str(tmp_path / "rep"), "--no-bisect"], capsys)
    assert rc == 0, out
    r = fresh_run(tmp_path / "rep" / "repro.py")
    assert r.returncode == 1, r.stdout + r.stderr
    # Where the next op refuses the wrong shape, nothing prints: no repro.py, and it says so.
    case.write_text(_arange_in_callee(consumer=True).dumps())
    rc, out = cli(["report", str(case), "--out", str(tmp_path / "rep2"), "--no-bisect"], capsys)
    assert rc == 0, out
    assert not (tmp_path / "rep2" / "repro.py").exists()
    assert "wrote report.md to" in out and "no repro.py" in out


def test_a_pinned_schedule_lets_dead_bindings_and_steps_go(tmp_path):
    """A Relax "scheduled" finding replays the steps it applied (``schedule_steps``), not a
    new draw from its seed on each smaller module, so the reducer removes bindings the bug
    does not need and drops the steps it does not need (seed 116's loop_partition of the
    matmul's reduction loop gives wrong sums: known, loop_partition-reduction-init)."""
    from fuzz.model import Node, Param, TensorTy
    from reducer.api import reduce_case
    from worker import cases

    sys.path.insert(0, str(Path(__file__).parent))
    from test_repro_fresh import scheduled

    # the reducer pins the seed's schedule itself, then drops the steps the bug does not need
    red = reduce_case(scheduled(116), out_dir=tmp_path / "seeded", timeout=120)
    assert [s["prim"] for s in red.reduced.meta["variants"][-1]["schedule_steps"]] == [
        "loop_partition"]
    prog = scheduled(116)
    first = cases.judge(cases.job(prog))
    assert first.extra["numeric_key"].endswith("after loop_partition")
    main = prog.main
    main.params.append(Param("z", TensorTy([6], "float32")))
    main.blocks[0].nodes.insert(0, Node("d1", "relax.exp", ["z"], {}, TensorTy([6], "float32")))
    prog.meta["variants"][1]["schedule_steps"] = first.extra["schedule"]
    red = reduce_case(prog, out_dir=tmp_path / "red", timeout=120)
    names = [n.name for n in red.reduced.main.nodes()]
    assert "d1" not in names, names
    steps = red.reduced.meta["variants"][-1]["schedule_steps"]
    assert [s["prim"] for s in steps] == ["loop_partition"], steps
    assert red.outcome.reproduction["reproduced"] == 3


def test_a_background_reduction_that_writes_nothing_leaves_no_directory(tmp_path):
    """The campaign's background reducer: a bucket whose reduction fails before writing
    anything (here a case that does not fail at all) leaves no empty reduced/<bucket>/ that
    would look like a result (campaign seed 90000 left one, 89ad49b7a120)."""
    import time

    from reducer.autoreduce import AutoReducer

    t = TensorTy([4], "float32")   # x + x: builds, runs and agrees with numpy
    passing = Program([Function("main", [Param("x", t)], [Block(True, [
        Node("v1", "relax.add", ["x", "x"], {}, t)])], "v1")], "main", {"mode": "valid",
                                                                      "seed": 3})
    auto = AutoReducer(tmp_path, echo=lambda s: None, per_bucket_s=30)
    auto.submit("b1", passing, "")
    deadline = time.monotonic() + 120
    while ("b1" not in auto.failed and "b1" not in auto.done) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert auto.close() == []
    assert "b1" in auto.failed
    assert not (tmp_path / "reduced" / "b1").exists()


def test_a_background_reduction_cut_short_is_listed_to_reduce_later(tmp_path):
    """A campaign that ends mid-reduction lists that bucket with the waiting ones, even when
    its directory already holds a partial case (it has no repro.py or report.md yet)."""
    import time

    from reducer.autoreduce import AutoReducer

    auto = AutoReducer(tmp_path, echo=lambda s: None, per_bucket_s=60)
    auto.submit("b1", cosh_case(), "")
    partial = tmp_path / "reduced" / "b1" / "partial.case.json"
    deadline = time.monotonic() + 60
    while not partial.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert partial.exists() and auto.current == "b1"
    assert auto.close(wait_s=0) == ["b1"]
