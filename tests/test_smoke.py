import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfuzz.cli import main

PLUGINS = str(Path(__file__).resolve().parent / "plugins")
ROOT = str(Path(__file__).resolve().parents[1])


def _smoke(args, tmp_path, env=None):
    env = {**os.environ, **(env or {})}
    # this checkout's tvmfuzz, not an installed one (the child runs in tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.run([sys.executable, "-m", "tvmfuzz", "smoke", *args],
                          capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)


def test_same_seed_gives_the_same_cases(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert main(["smoke", "--cases", "10", "--seed", "5", "--out", str(a)]) in (0, 1)
    assert main(["smoke", "--cases", "10", "--seed", "5", "--out", str(b)]) in (0, 1)
    ja = json.loads((a / "smoke.json").read_text())
    jb = json.loads((b / "smoke.json").read_text())
    assert ja["case_hashes"] == jb["case_hashes"] and len(ja["case_hashes"]) == 10
    assert ja["new"] == jb["new"]


def test_baseline_accepts_known_signatures_and_planted_bug_fails(tmp_path):
    base = tmp_path / "baseline.json"
    out = tmp_path / "out"
    r = _smoke(["--cases", "12", "--out", str(out), "--baseline", str(base),
                "--update-baseline"], tmp_path)
    assert r.returncode == 0, r.stderr
    saved = json.loads(base.read_text())
    assert saved["signatures"] and saved["bugs"]           # bug ids are kept beside signatures
    r = _smoke(["--cases", "12", "--out", str(out), "--baseline", str(base)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", 0 new," in r.stdout
    # a baseline written before bugs existed (signatures only) still works
    base.write_text(json.dumps({"version": 1, "tvm": "x", "signatures": saved["signatures"]}))
    r = _smoke(["--cases", "12", "--out", str(out), "--baseline", str(base)], tmp_path)
    assert r.returncode == 0 and ", 0 new," in r.stdout, r.stdout + r.stderr
    # A planted bug: a pass that crashes on tuple-returning functions. It is new, so the run fails with it.
    r = _smoke(["--cases", "12", "--out", str(out), "--baseline", str(base),
                "--extra-pass", "tvmfuzz_planted:crash_on_tuple"], tmp_path,
               env={"PYTHONPATH": PLUGINS})
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NEW" in r.stdout and "planted bug" in r.stdout
    junit = (out / "smoke.junit.xml").read_text()
    assert "<failure" in junit and "planted bug" in junit
    sarif = json.loads((out / "smoke.sarif").read_text())
    assert any(res["baselineState"] == "new" and "planted bug" in res["message"]["text"]
               for res in sarif["runs"][0]["results"])


def test_sarif_validates_against_the_2_1_0_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from sarif_schema import sarif_schema

    schema = sarif_schema()
    if schema is None:
        pytest.skip("SARIF schema unavailable (no npm registry)")
    out = tmp_path / "out"
    _smoke(["--cases", "12", "--out", str(out), "--extra-pass",
            "tvmfuzz_planted:crash_on_tuple"], tmp_path, env={"PYTHONPATH": PLUGINS})
    sarif = json.loads((out / "smoke.sarif").read_text())
    assert sarif["runs"][0]["results"], "the planted bug must give at least one result"
    jsonschema.validate(sarif, schema)


@pytest.mark.parametrize("args", [["--baseline", "{bad}", "--cases", "1"],
                                  ["--update-baseline", "--cases", "1"]])
def test_usage_and_environment_errors_exit_2(args, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    args = [a.replace("{bad}", str(bad)) for a in args]
    r = _smoke([*args, "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 2 and r.stderr.startswith("tvmfuzz: error:"), r.stderr


def test_only_new_bugs_fail_and_triage_verdicts_count(tmp_path):
    """Seeds 0..15 meet new bugs and known or expected ones (a known-bug op, CodeGenVM
    refusing a mutant's erased types): exit 1 for the new ones only; once a user records them
    as known in a corpus, the same run exits 0 and lists every bug."""
    from corpus import Corpus
    from fuzz.model import Program

    out = tmp_path / "out"
    r = _smoke(["--cases", "16", "--out", str(out)], tmp_path)
    data = json.loads((out / "smoke.json").read_text())
    quiet = [b for b in data["bugs"] if b["status"] in ("known", "expected")]
    assert data["new_bugs"] and quiet, data["bugs"]      # this seed range meets both
    assert r.returncode == 1, r.stdout + r.stderr
    assert sorted(data["new"]) == sorted(s for b in data["bugs"] if b["fails"]
                                         for s in b["signatures"])
    for b in quiet:
        assert not b["fails"] and f"  {b['status']} bug {b['id']}" in r.stdout
    assert r.stdout.index("NEW bug") < min(r.stdout.index(f"bug {b['id']}") for b in quiet)
    junit = (out / "smoke.junit.xml").read_text()
    assert f'failures="{len(data["new"])}"' in junit
    sarif = json.loads((out / "smoke.sarif").read_text())
    levels = {res["ruleId"]: res["level"] for res in sarif["runs"][0]["results"]}
    assert {s for s, lv in levels.items() if lv == "error"} == set(data["new"])

    corpus = tmp_path / "corpus"
    with Corpus(corpus) as c:
        for f in out.glob("findings/*/case_*.outcome.json"):
            case = f.with_name(f.name.replace(".outcome.json", ".json"))
            c.add_finding(Program.loads(case.read_text()), json.loads(f.read_text()),
                          tvm_version="0.27.0.post1", tvmfuzz_version="0.1.0")
    for bid in data["new_bugs"]:
        assert main(["triage", bid, "--known", f"https://example.org/{bid}",
                     "--corpus", str(corpus)]) == 0
    again = tmp_path / "again"
    r = _smoke(["--cases", "16", "--out", str(again), "--corpus", str(corpus)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    data2 = json.loads((again / "smoke.json").read_text())
    assert data2["new_bugs"] == [] and data2["new"] == []
    statuses = {b["id"]: b for b in data2["bugs"]}
    for bid in data["new_bugs"]:
        assert statuses[bid]["status"] == "known"
        assert f"recorded by a user: https://example.org/{bid}" in statuses[bid]["reason"]
    assert "NEW" not in r.stdout and ", 0 new," in r.stdout
