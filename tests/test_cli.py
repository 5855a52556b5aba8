import json
import os
import subprocess
import sys

import pytest

from corpus import Corpus
from tvmfuzz.cli import main
from fuzz.signature import short

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Children run this checkout's tvmfuzz, not an installed one (their cwd is elsewhere).
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])}


def test_gen_writes_json_and_script_per_case_and_histograms(tmp_path, capsys):
    assert main(["gen", "--count", "4", "--seed", "7", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for s in range(7, 11):
        assert (tmp_path / f"case_{s:06d}.json").exists()
        text = (tmp_path / f"case_{s:06d}.py").read_text()
        assert "@I.ir_module" in text
    assert "ops:" in out and "dtypes (parameters):" in out and "shape kinds (parameters):" in out


def test_gen_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    main(["gen", "--count", "3", "--seed", "3", "--out", str(a)])
    main(["gen", "--count", "3", "--seed", "3", "--out", str(b)])
    for f in sorted(a.iterdir()):
        assert f.read_text() == (b / f.name).read_text()


@pytest.mark.parametrize("argv", [
    ["gen", "--count", "0", "--out", "x"],
    ["gen", "--count", "3"],                       # --out missing
    ["gen", "--count", "3", "--out", "x", "--mode", "bogus"],
    ["run", "--time", "soon"],
    ["frobnicate"],
    ["gen", "--no-such-flag"],
])
def test_bad_options_give_one_line_and_exit_2(argv, tmp_path):
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", *argv], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120, env=ENV)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tvmfuzz: error:"), r.stderr


def test_unwritable_output_dir_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "gen", "--count", "1", "--out",
                        str(blocker / "sub")], capture_output=True, text=True, timeout=120,
                       env=ENV)
    assert r.returncode == 2 and "cannot write to output directory" in r.stderr


def test_run_campaign_lists_failures_and_saves_cases(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--time", "8s", "--out", str(out), "--seed", "0"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] > 0
    printed = capsys.readouterr().out
    assert f"{summary['cases']} cases in" in printed
    saved = [p for p in out.glob("findings/*/case_*.json") if not p.name.endswith(".outcome.json")]
    kept = sum(v for k, v in summary["verdicts"].items() if k in ("fail", "invalid"))
    assert len(saved) == kept
    # invalid near-valid mutants are counted apart from generator defects
    def outcome_of(p):
        return json.loads(p.with_name(p.stem + ".outcome.json").read_text())

    invalid = [p for p in saved if outcome_of(p)["verdict"] == "invalid"]
    refused = [p for p in invalid if json.loads(p.read_text())["meta"].get("mode") == "near-valid"]
    unexportable = [p for p in invalid if outcome_of(p)["kind"] == "not_exportable"
                    and p not in refused]
    assert summary["refused_mutants"] == len(refused)
    assert summary["not_exportable"] == len(unexportable)
    assert f"near-valid mutants TVM refused to construct {len(refused)}" in printed
    # PyTorch modules eager torch or torch.export refuse (where torch is installed) too
    torch_refused = [p for p in invalid if outcome_of(p)["kind"] in ("torch_rejected",
                                                                      "torch_disagrees")]
    assert summary["torch_refused"] == len(torch_refused)
    defects = len(invalid) - len(refused) - len(unexportable) - len(torch_refused)
    assert f"invalid {len(invalid)} (generator defects {defects}," in printed
    for s in summary["signatures"]:
        assert f"{s['count']:4d}  {short(s['signature'], 200)}" in printed
    # signatures grouped into bugs, each with a status; new bugs first
    bugs = summary["bugs"]
    assert summary["unique_bugs"] == len(bugs) <= len(summary["signatures"])
    assert sum(b["count"] for b in bugs) == summary["verdicts"].get("fail", 0)
    assert sum(b["signatures"] for b in bugs) == len(summary["signatures"])
    order = {"new": 0, "known": 1, "expected": 2}
    assert [order[b["status"]] for b in bugs] == sorted(order[b["status"]] for b in bugs)
    assert summary["new_bugs"] == sum(b["status"] == "new" for b in bugs)
    for b in bugs:
        assert b["reason"] and f"  {b['id']}  {short(b['key'], 160)}" in printed
    if bugs:
        assert f"{len(bugs)} bugs (" in printed
    stats = [json.loads(x) for x in (out / "stats.jsonl").read_text().splitlines()]
    assert stats and stats[-1]["cases"] == summary["cases"]


@pytest.mark.slow
def test_killed_local_campaign_resumes_with_its_findings_intact(tmp_path):
    """SIGKILL the embedded-default campaign mid-run; --resume continues from the watermark
    and every finding stored before the kill is still in the corpus."""
    import signal
    import time


    out, corpus = tmp_path / "run", tmp_path / "corpus"
    args = [sys.executable, "-m", "tvmfuzz", "run", "--time", "10m", "--out", str(out),
            "--corpus", str(corpus), "--no-live", "--replays", "1"]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True, env=ENV)
    deadline = time.time() + 240
    while time.time() < deadline:
        state = out / "campaign.json"
        if state.exists() and json.loads(state.read_text())["watermark"] >= 8:   # one batch
            break
        time.sleep(1)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    before = json.loads((out / "campaign.json").read_text())
    with Corpus(corpus) as c:
        assert c.integrity_check() == "ok"
        stored = {f["case_hash"] for f in c.findings()}
    assert stored, "no finding stored before the kill: nothing to find intact"
    # a resumed campaign finishes the batch it starts, however short the budget
    r = subprocess.run(args[:5] + ["5s"] + args[6:] + ["--resume"], capture_output=True,
                       text=True, timeout=300, env=ENV)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"at seed {before['watermark']}" in r.stdout
    after = json.loads((out / "campaign.json").read_text())
    assert after["watermark"] > before["watermark"]
    with Corpus(corpus) as c:
        assert stored <= {f["case_hash"] for f in c.findings()}


@pytest.mark.slow
def test_campaign_reduces_new_buckets_unless_told_not_to(tmp_path):
    """New bugs' buckets are reduced in the background; known bugs' and mutants' expected
    refusals are not (they need no report)."""
    out = tmp_path / "run"
    # The seed was chosen for the relax,tir mix (the default before ONNX cases joined it).
    assert main(["run", "--time", "30s", "--out", str(out), "--corpus", str(tmp_path / "c"),
                 "--no-live", "--seed", "41000", "--ir", "relax,tir"]) == 0
    reduced = list((out / "reduced").glob("*/case.json")) if (out / "reduced").exists() else []
    assert reduced, "campaigns find new buckets within seconds; one must be reduced"
    for case in reduced:
        # a directory with case.json holds the whole result; the best-so-far file is gone
        assert (case.parent / "repro.py").exists() and (case.parent / "report.md").exists()
        assert not list(case.parent.glob("partial.*")), case.parent
    with Corpus(tmp_path / "c") as c:
        status = {b["id"]: b["status"] for b in c.bugs()}
        bug_of = {k["id"]: k["bug_id"] for k in c.buckets()}
    assert "known" in status.values() or "expected" in status.values(), status
    for case in reduced:
        assert status[bug_of[case.parent.name]] == "new", case.parent.name
    out2 = tmp_path / "run2"
    assert main(["run", "--time", "10s", "--out", str(out2), "--corpus", str(tmp_path / "c2"),
                 "--no-live", "--no-reduce", "--mode", "near-valid"]) == 0
    assert not (out2 / "reduced").exists()


def test_a_folder_named_like_a_package_does_not_shadow_it(tmp_path):
    """`python -m tvmfuzz` run where the user keeps a store in a folder called `corpus`
    (tvmfuzz's package of that name) still imports tvmfuzz's own package."""
    (tmp_path / "corpus").mkdir()
    # as a user runs it: the installed tvmfuzz (pip install -e . puts no directory on
    # sys.path, so the working directory's namespace folder would win)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "findings", "--corpus",
                        str(tmp_path / "store")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env=env)
    # tvmfuzz's own one-line answer about the missing store, not an ImportError
    assert r.returncode == 2 and "no corpus at" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
