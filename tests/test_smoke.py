import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tvmfuzz.cli import main

PLUGINS = str(Path(__file__).resolve().parent / "plugins")


def _smoke(args, tmp_path, env=None):
    return subprocess.run([sys.executable, "-m", "tvmfuzz", "smoke", *args],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})}, cwd=tmp_path)


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
    r = _smoke(["--cases", "12", "--out", str(out), "--baseline", str(base)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ", 0 new," in r.stdout
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
