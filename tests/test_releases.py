"""Other TVM releases: `tvmfuzz env add/list/remove`, `--env VERSION`, `tvmfuzz bisect` and the
"Affected versions" section of report.md.

Fast tests use only the default release (and PyPI, for a version that does not exist). Tests
marked ``release`` install 0.25.0 and 0.26.0 with the real `tvmfuzz env add` into
``.cache/tvmfuzz-home`` (kept between runs) and run there: `pytest -m release --releases`.
"""
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from fuzz.model import Block, Function, Node, Param, Program, TensorTy
from worker.bisect import release_key, same_bug

ROOT = Path(__file__).resolve().parents[1]
RELEASE_HOME = ROOT / ".cache" / "tvmfuzz-home"
DEFAULT = metadata.version("apache-tvm")


def tvmfuzz(*args, home, timeout=900):
    env = dict(os.environ, TVMFUZZ_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "tvmfuzz", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def one_op(op, dtype, shape=(4,), lo=-0.9, hi=0.9, attrs=None, out=None, seed=1):
    t = TensorTy(list(shape), dtype)
    node = Node("v1", op, ["x"], attrs or {}, out or t)
    return Program([Function("main", [Param("x", t, lo, hi)], [Block(True, [node])], "v1")],
                   "main", {"mode": "valid", "seed": seed})


# A real TVM 0.27 bug (fuzz/catalogue/known_bugs.py): LLVM codegen has no float16 lowering for
# acos. Checked by hand: 0.25.0 and 0.26.0 fail the same way (unknown intrinsic tirx.acos,
# thrown in codegen_llvm.cc at another line on each release).
ACOS_F16 = one_op("relax.acos", "float16")
ACOS_F32 = one_op("relax.acos", "float32")


def one_line_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvmfuzz: error: "), r.stderr
    for n in needles:
        assert n in lines[0], lines[0]


# --- fast: the default release only -----------------------------------------------------------
def test_release_key_ignores_line_numbers_and_dtype_spelling():
    a = ("crash | build | InternalError | unknown intrinsic Op(tirx.acos) "
         "@ src/target/llvm/codegen_llvm.cc:1532")
    assert release_key(a) == release_key(a.replace(":1532", ":1506"))
    assert same_bug("crash | build | InternalError | Data type T.bfloat16 not supported @ "
                    "src/tirx/op/op.cc:346 [pass LegalizeOps]",
                    "crash | build | InternalError | Data type bfloat16 not supported @ "
                    "src/tirx/op/op.cc:963 [pass LegalizeOps]")
    assert not same_bug(a, a.replace("acos", "asin"))
    assert not same_bug(a, a.replace("codegen_llvm.cc", "codegen_c.cc"))
    assert not same_bug("", "")


def test_env_add_unknown_version_fails_cleanly_and_leaves_nothing(tmp_path):
    home = tmp_path / "home"
    r = tvmfuzz("env", "add", "0.0.1", home=home, timeout=600)
    one_line_error(r, "env add 0.0.1", "pip could not install apache-tvm==0.0.1")
    assert not home.exists(), list(home.rglob("*"))


def test_env_add_refuses_a_non_version_without_touching_disk(tmp_path):
    home = tmp_path / "home"
    one_line_error(tvmfuzz("env", "add", "../x", home=home), "not a TVM release version")
    one_line_error(tvmfuzz("env", "remove", "0.25.0", home=home), "no env for release 0.25.0")
    assert not home.exists()


def test_env_add_with_an_unknown_frontend_fails_before_touching_disk(tmp_path):
    r = tvmfuzz("env", "add", "0.25.0", "--with", "caffe", home=tmp_path / "h")
    one_line_error(r, "--with caffe", "onnx")
    assert not (tmp_path / "h").exists()


def test_env_list_shows_the_default_release(tmp_path):
    r = tvmfuzz("env", "list", "--format", "json", home=tmp_path)
    assert r.returncode == 0, r.stderr
    rels = json.loads(r.stdout)["releases"]
    assert [(x["version"], x["default"], x["python"]) for x in rels] == \
        [(DEFAULT, True, sys.executable)]
    text = tvmfuzz("env", "list", home=tmp_path).stdout
    assert f"{DEFAULT} (default)" in text and "tvmfuzz env add" in text


@pytest.mark.parametrize("cmd", ["run", "replay", "reduce", "report", "smoke", "worker"])
def test_env_option_with_an_unknown_release_is_one_line(tmp_path, cmd):
    case = tmp_path / "case.json"
    case.write_text(ACOS_F16.dumps())
    args = {"run": ["--time", "5s", "--out", tmp_path / "o"], "replay": [case],
            "reduce": [case], "report": [case], "smoke": ["--cases", "1", "--out", tmp_path / "o"],
            "worker": []}
    r = tvmfuzz(cmd, *args[cmd], "--env", "0.24.9", home=tmp_path / "home", timeout=120)
    one_line_error(r, "--env 0.24.9", "tvmfuzz env add 0.24.9")


def test_bisect_with_the_default_release_only(tmp_path):
    home = tmp_path / "home"
    found = tmp_path / "findings" / "crash"
    found.mkdir(parents=True)
    case = found / "case_000001.json"
    case.write_text(ACOS_F16.dumps())
    r = tvmfuzz("bisect", case, "--format", "json", home=home, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert "Op(tirx.acos)" in out["signature"] and not out["stored_signature"]
    [rel] = out["releases"]
    assert (rel["version"], rel["verdict"], rel["default"]) == (DEFAULT, "present", True)
    assert rel["python"] == sys.executable and rel["signature"] == out["signature"]
    assert not (found / "bisect.json").exists()   # not a reducer directory

    # The signature a campaign stored beside the case is the one looked for.
    (found / "case_000001.outcome.json").write_text(json.dumps(
        {"signature": out["signature"].replace("acos", "asin")}))
    r = tvmfuzz("bisect", case, "--format", "json", home=home, timeout=300)
    [rel] = json.loads(r.stdout)["releases"]
    assert rel["verdict"] == "different" and "Op(tirx.acos)" in rel["signature"]

    passing = tmp_path / "pass.json"
    passing.write_text(ACOS_F32.dumps())
    r = tvmfuzz("bisect", passing, home=home, timeout=300)
    assert r.returncode == 0 and "absent" in r.stdout, r.stdout + r.stderr


def test_bisect_updates_a_reducer_directory(tmp_path):
    d = tmp_path / "reduced"
    d.mkdir()
    (d / "case.json").write_text(ACOS_F16.dumps())
    (d / "report.md").write_text("# title\n\n### Environment\n\nx\n\n### Steps to reproduce\n\ny\n")
    r = tvmfuzz("bisect", d, home=tmp_path / "home", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "present" in r.stdout and "wrote bisect.json" in r.stdout
    saved = json.loads((d / "bisect.json").read_text())
    assert [x["verdict"] for x in saved["releases"]] == ["present"]
    report = (d / "report.md").read_text()
    assert report.index("### Affected versions") < report.index("### Steps to reproduce")
    assert f"| apache-tvm {DEFAULT} (default) | present |" in report
    # A second bisect replaces the section instead of adding another.
    tvmfuzz("bisect", d, home=tmp_path / "home", timeout=300)
    assert (d / "report.md").read_text().count("### Affected versions") == 1


def test_bisect_refuses_a_script_that_runs_code(tmp_path):
    marker = tmp_path / "pwned"
    f = tmp_path / "evil.py"
    f.write_text("from tvm.script import ir as I\n"
                 f"__import__('os').system('touch {marker}')\n")
    one_line_error(tvmfuzz("bisect", f, home=tmp_path / "home"), "refused")
    assert not marker.exists()


def test_report_says_which_releases_were_checked(tmp_path):
    case = tmp_path / "case.json"
    case.write_text(ACOS_F16.dumps())
    r = tvmfuzz("report", case, "--out", tmp_path / "rep", home=tmp_path / "home", timeout=300)
    assert r.returncode == 0, r.stderr
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "### Affected versions" in report
    assert f"Checked on apache-tvm {DEFAULT} only" in report


# --- other releases (pytest -m release --releases) --------------------------------------------
RELEASES = ("0.25.0", "0.26.0")


@pytest.fixture(scope="module")
def home(release_home):
    """0.25.0 and 0.26.0 (tests/conftest.py installs them)."""
    return release_home


def _verdicts(result):
    return {r["version"]: r["verdict"] for r in result["releases"]}


@pytest.mark.release
def test_envs_are_listed_with_their_versions(home):
    rels = json.loads(tvmfuzz("env", "list", "--format", "json", home=home).stdout)["releases"]
    got = {r["version"]: (r["tvm"], r["default"]) for r in rels}
    assert got[DEFAULT] == (DEFAULT, True)
    for v in RELEASES:
        assert got[v] == (v, False)
        assert Path(home / "envs" / v / "bin" / "python").exists()


# Generated programs (fuzz.generate, valid mode, generator v3) that build, run and agree with
# numpy on every release, checked by hand on 0.25.0, 0.26.0 and 0.27.0.post1. Between them:
# symbolic dims, ndim-only and unknown-shape parameters with match_cast, called helper
# functions, R.If branches (287; v3's 286 meets known bugs on 0.25 and 0.26), 12 ops each.
# Stored as case JSON (tests/data/relax_v3_seed<seed>_passes_on_every_release.json): a later
# generator version draws other programs from these seeds.
PASSING_SEEDS = (235, 324, 287)


@pytest.mark.release
@pytest.mark.parametrize("version", RELEASES)
def test_generated_relax_program_agrees_with_numpy(home, tmp_path, version):
    data = Path(__file__).parent / "data"
    for seed in PASSING_SEEDS:
        case = tmp_path / f"case_{seed}.json"
        case.write_text((data / f"relax_v3_seed{seed}_passes_on_every_release.json").read_text())
        r = tvmfuzz("replay", case, "--env", version, "--times", "1", "--format", "json",
                    home=home, timeout=600)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["verdict"] == "pass", (seed, out["signature"], out["message"])


@pytest.mark.release
def test_campaign_on_an_older_release(home, tmp_path):
    """`tvmfuzz run --env 0.25.0`: the program model materializes there (an adapter gap would
    make nearly every case `invalid`), and the corpus records the release that was tested."""
    out = tmp_path / "camp"
    r = tvmfuzz("run", "--env", "0.25.0", "--time", "20s", "--out", out, "--targets", "llvm",
                "--ir", "relax", "--no-reduce", "--no-live", "--corpus", tmp_path / "corpus",
                home=home, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    cases, invalid = summary["cases"], summary["verdicts"].get("invalid", 0)
    assert cases >= 5 and invalid <= cases * 0.2, summary
    buckets = json.loads(tvmfuzz("findings", "--corpus", tmp_path / "corpus", "--format", "json",
                                 "--buckets", home=home).stdout)   # the flat bucket list
    assert {b["tvm_version"] for b in buckets} <= {"0.25.0"}


@pytest.mark.release
def test_onnx_campaign_on_an_older_release(home, tmp_path):
    """`tvmfuzz env add 0.25.0 --with onnx` puts the default release's onnx and onnxruntime in
    that env, and `--ir onnx --env 0.25.0` imports, builds and runs ONNX cases there with
    0.25's own `from_onnx`: most cases get a verdict other than invalid."""
    r = tvmfuzz("env", "add", "0.25.0", "--with", "onnx", home=home, timeout=1800)
    assert r.returncode == 0, r.stderr
    assert "onnx" in json.loads((home / "envs" / "0.25.0" / "tvmfuzz-env.json").read_text())[
        "frontends"]
    out = tmp_path / "camp"
    r = tvmfuzz("run", "--env", "0.25.0", "--time", "30s", "--out", out, "--targets", "llvm",
                "--ir", "onnx", "--no-reduce", "--no-live", "--corpus", tmp_path / "corpus",
                home=home, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    cases, invalid = summary["cases"], summary["verdicts"].get("invalid", 0)
    assert cases >= 5 and invalid <= cases * 0.3, summary


def _row(version):
    return f"| apache-tvm {version}{' (default)' if version == DEFAULT else ''} | "


# Real findings and where each is, checked by hand on every release (tvmfuzz replay --env):
#  * float16 acos: LLVM codegen "unknown intrinsic tirx.acos" (a 0.27 finding, known_bugs.py);
#    the same failure on 0.26.0 and 0.25.0, thrown in codegen_llvm.cc at other lines.
#  * conv3d_transpose with dilation 2: 0.25.0 does not legalize it and VM codegen fails
#    ("CodeGenVM cannot handle this intrinsic now"); 0.26.0 and 0.27 build and run it right.
#  * adaptive_avg_pool2d float64 widening W 1 -> 4: wrong results on 0.25.0 and 0.26.0, fixed
#    in 0.27 (agrees with numpy).
F32 = "float32"
CONV3DT = Program([Function("main", [Param("x0", TensorTy([1, 2, 2, 2, 2], F32), -1.0, 1.0),
                                     Param("x1", TensorTy([2, 1, 1, 1, 1], F32), -1.0, 1.0)],
                            [Block(True, [Node("v1", "relax.nn.conv3d_transpose", ["x0", "x1"], {
                                "data_layout": "NCDHW", "dilation": [2, 1, 2], "groups": 1,
                                "kernel_layout": "IODHW", "out_dtype": None,
                                "output_padding": [0, 0, 0], "padding": [0, 0, 0, 0, 0, 0],
                                "strides": [1, 1, 2]}, TensorTy([1, 1, 2, 2, 3], F32))])], "v1")],
                  "main", {"mode": "valid", "seed": 1})
POOL2D = one_op("relax.nn.adaptive_avg_pool2d", "float64", shape=(2, 1, 4, 1), lo=-1.0, hi=1.0,
                attrs={"output_size": [1, 4], "layout": "NCHW", "out_layout": "NCHW"},
                out=TensorTy([2, 1, 1, 4], "float64"))
TRUTH = {
    "acos_f16": (ACOS_F16, DEFAULT, "Op(tirx.acos)",
                 {DEFAULT: "present", "0.26.0": "present", "0.25.0": "present"}),
    "conv3d_transpose": (CONV3DT, "0.25.0", "CodeGenVM cannot handle this intrinsic",
                         {DEFAULT: "absent", "0.26.0": "absent", "0.25.0": "present"}),
    "adaptive_avg_pool2d": (POOL2D, "0.26.0", "numeric | compare | relax.nn.adaptive_avg_pool2d",
                            {DEFAULT: "absent", "0.26.0": "present", "0.25.0": "present"}),
}


@pytest.mark.release
@pytest.mark.parametrize("name", list(TRUTH))
def test_bisect_a_finding_and_report_it(home, tmp_path, name):
    """The finding is reported on the release it was found on (`tvmfuzz report --env`), which
    bisects it on every installed release into report.md; `tvmfuzz bisect` on the report's
    directory finds the same verdicts from the stored signature and rewrites the section."""
    program, found_on, needle, truth = TRUTH[name]
    case, d = tmp_path / "case.json", tmp_path / "rep"
    case.write_text(program.dumps())
    env = [] if found_on == DEFAULT else ["--env", found_on]
    r = tvmfuzz("report", case, "--out", d, *env, home=home, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "affected versions: " in r.stdout and needle in r.stdout
    assert _verdicts(json.loads((d / "bisect.json").read_text())) == truth
    report = (d / "report.md").read_text()
    assert f"- TVM: apache-tvm {found_on} (PyPI)" in report
    for version, verdict in truth.items():
        assert _row(version) + verdict + " |" in report, report

    (d / "bisect.json").unlink()
    r = tvmfuzz("bisect", d, "--format", "json", home=home, timeout=900)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stored_signature"] and needle in out["signature"]
    assert _verdicts(out) == truth
    by = {x["version"]: x for x in out["releases"]}
    assert by[found_on]["signature"] == out["signature"]
    for version, verdict in truth.items():
        assert (by[version]["signature"] == "") == (verdict == "absent")
        assert by[version]["tvm"] == version
    assert _verdicts(json.loads((d / "bisect.json").read_text())) == truth
    assert (d / "report.md").read_text().count("### Affected versions") == 1


def test_bisect_error_rows(tmp_path):
    """A release where the sandbox does not start, and one where the case does not
    materialize, are `error` rows with the reason, not a failed bisect."""
    from worker.bisect import Subject, _judge, bisect
    from worker.cases import job as case_job
    from worker.releases import Release, default_release

    broken = Release("9.9.9", "9.9.9", "/bin/false")
    out = bisect(Subject("acos", case_job(ACOS_F16)), [default_release(), broken], timeout=120)
    by = {r["version"]: r for r in out["releases"]}
    assert by[DEFAULT]["verdict"] == "present" and "Op(tirx.acos)" in out["signature"]
    assert by["9.9.9"]["verdict"] == "error" and "sandbox server did not start" in \
        by["9.9.9"]["message"]
    from fuzz.outcome import Outcome

    invalid = Outcome("invalid", "generator", "materialize", "TypeError", "no such op")
    row = _judge([invalid], out["signature"])
    assert row["verdict"] == "error" and "cannot be materialized" in row["message"]
    rejected = Outcome("rejected", "rejected", "build", "InternalError", "CodeGenVM")
    row = _judge([rejected], out["signature"])
    assert row["verdict"] == "absent" and "both refuse" in row["message"]


def _axis_separators_case():
    """Bug class 4: a 1-D buffer declared with axis_separators=[1] (malformed: a separator
    must lie inside the buffer's dims), with an unrelated loop the reducer must remove."""
    from fuzz.tir import model as M

    a = M.BufDecl("A", [16], "float32", how="match_buffer", axis_separators=[1])
    b = M.BufDecl("B", [16], "float32")
    c = M.BufDecl("C", [4], "int32")
    body = [M.For("i", 16, "serial", [M.Store("B", [M.var("i")], M.binop(
                "+", M.load("A", [M.var("i")]), M.const("float32", 1.0)))]),
            M.For("j", 4, "parallel", [M.Store("C", [M.var("j")], M.var("j"))])]
    return M.TirProgram("main", [a, b, c], body, {
        "seed": 0, "mode": "near-valid", "invalid": "A: 1-D buffer with axis_separators=[1]",
        "variants": [{"target": {"kind": "llvm"}, "pipeline": "tir"}]})


@pytest.mark.release
def test_axis_separators_late_validation_on_025_reduced_and_bisected(home, tmp_path):
    case = tmp_path / "case.json"
    case.write_text(_axis_separators_case().dumps())
    out = tmp_path / "red"
    r = tvmfuzz("reduce", case, "--env", "0.25.0", "--out", out, home=home, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    outcome = json.loads((out / "outcome.json").read_text())
    assert outcome["kind"] == "late_validation", outcome["signature"]
    assert "flat 1-d buffers" in outcome["message"]
    text = (out / "case.py").read_text()
    assert "axis_separators=[1]" in text and "C[" not in text
    report = (out / "report.md").read_text()
    assert report.startswith("# [Bug][TIR]") and "apache-tvm 0.25.0" in report
    # Only 0.25 has axis_separators: the later releases cannot even express the case.
    r = tvmfuzz("bisect", out, "--format", "json", home=home, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    got = _verdicts(json.loads(r.stdout))
    assert got["0.25.0"] == "present" and got["0.26.0"] != "present" and got[DEFAULT] != "present"
    assert "0.25.0" in (out / "report.md").read_text().split("Affected versions")[1]


def _cache_write_case():
    """A TIR finding from a 0.27 campaign (seed 70166, reduced): cache_write of a block writing
    a decl_buffer leaves the buffer defined twice on 0.27; 0.25 and 0.26 schedule, build and
    run it (checked by hand with the reduced case's repro.py under each release)."""
    from fuzz.tir import model as M

    t2 = M.BufDecl("t2", [1], "float32", how="alloc")
    block = M.Block("b6", [M.IterVar("v4", "S", 1, M.const("int32", 0))], None,
                    [M.Store("t2", [M.var("v4")], M.const("float32", 0.5))])
    return M.TirProgram("main", [M.BufDecl("p1", [33], "uint8")],
                        [M.Alloc(t2, "decl_buffer"), block], {
                            "seed": 70166, "mode": "valid", "inputs": {"p1": {"lo": 0, "hi": 8, "q": 0}},
                            "variants": [{"target": {"kind": "llvm"}, "pipeline": "tir"}],
                            "schedule": {"applied": [{"func": "main", "prim": "cache_write",
                                                      "block": "b6", "buffer_index": 0,
                                                      "scope": "local"}]}})


@pytest.mark.release
def test_tir_finding_from_027_bisects_present_absent(home, tmp_path):
    case = tmp_path / "case.json"
    case.write_text(_cache_write_case().dumps())
    out = tmp_path / "rep"
    r = tvmfuzz("report", case, "--out", out, home=home, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = _verdicts(json.loads((out / "bisect.json").read_text()))
    assert got == {DEFAULT: "present", "0.26.0": "absent", "0.25.0": "absent"}
    affected = (out / "report.md").read_text().split("### Affected versions")[1]
    assert _row("0.26.0") + "absent" in affected and _row(DEFAULT) + "present" in affected


@pytest.mark.release
def test_an_op_the_release_spells_otherwise_is_its_environment_not_the_generators(home,
                                                                                   tmp_path):
    """0.25.0's relax.op.image.affine_grid has no align_corners, which the catalogue (0.27's
    spelling) passes: the case is invalid for the release under test, kind environment, with
    the release's own words; never counted as a generator defect."""
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy

    theta, grid = TensorTy([1, 2, 3], "float32"), TensorTy([1, 2, 3, 4], "float32")
    node = Node("v1", "relax.image.affine_grid", ["p1"], {"size": [3, 4],
                                                         "align_corners": True}, grid)
    prog = Program([Function("main", [Param("p1", theta)], [Block(True, [node])], "v1")], "main",
                   {"mode": "valid", "seed": 0, "variants": None})
    case = tmp_path / "case.json"
    case.write_text(prog.dumps())
    for version, verdict in (("0.25.0", "invalid"), (DEFAULT, "pass")):
        r = tvmfuzz("replay", case, "--env", version, "--times", "1", "--format", "json",
                    home=home, timeout=600)
        out = json.loads(r.stdout)
        assert out["verdict"] == verdict, (version, out["signature"])
        if verdict == "invalid":
            assert out["kind"] == "environment", out["signature"]
            assert "affine_grid() got an unexpected keyword argument" in out["message"]
