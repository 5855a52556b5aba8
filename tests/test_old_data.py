"""Data written before round 2 (commit 7f0fb07) still loads and replays: case JSON from
`tvmfuzz gen`, campaign findings with their outcome files, and a corpus (tests/data/
before_round2/, made by that commit's own code)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "tests" / "data" / "before_round2"


def _tvmfuzz(*args, cwd):
    return subprocess.run([sys.executable, "-m", "tvmfuzz", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("case", sorted(p.name for p in (OLD / "findings").glob("*.json")
                                        if not p.name.endswith(".outcome.json")))
def test_old_findings_replay_as_the_same_kind_of_failure(tmp_path, case):
    stored = json.loads((OLD / "findings" / case.replace(".json", ".outcome.json")).read_text())
    r = _tvmfuzz("replay", OLD / "findings" / case, "--format", "json", "--times", "1",
                 cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["verdict"] == "fail" and got["kind"] == stored["kind"], (got, stored["signature"])


@pytest.mark.parametrize("case", sorted(p.name for p in OLD.glob("gen_*.json")))
def test_old_generated_cases_replay(tmp_path, case):
    r = _tvmfuzz("replay", OLD / case, "--format", "json", "--times", "1", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] in ("pass", "fail")


def test_old_corpus_lists_shows_and_its_buckets_replay(tmp_path):
    corpus = tmp_path / "old-store"   # not "corpus": python -m puts the cwd first on sys.path
    shutil.copytree(OLD / "corpus", corpus)
    r = _tvmfuzz("findings", "--corpus", corpus, "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    listed = json.loads(r.stdout)
    text = json.dumps(listed)
    kinds = {"crash", "signal", "numeric", "roundtrip", "late_validation"}
    assert all(k in text for k in kinds), text[:500]
    ids = _bucket_ids(listed)
    assert len(ids) == 5
    r = _tvmfuzz("show", ids[0], "--corpus", corpus, cwd=tmp_path)
    assert r.returncode == 0 and "signature" in r.stdout.lower(), r.stderr
    r = _tvmfuzz("bisect", ids[0], "--corpus", corpus, "--format", "json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["releases"][0]["verdict"] in ("present", "different")


def _bucket_ids(listed) -> list[str]:
    """Bucket ids from `findings --format json` (bugs, each with its buckets)."""
    return [b["id"] for bug in listed["bugs"] for b in bug["buckets"]]
