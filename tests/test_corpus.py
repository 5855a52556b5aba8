"""The corpus store: real SQLite, real files, real processes (killed and concurrent)."""
import errno
import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from corpus import (MAX_FINDINGS_PER_BUCKET, SCHEMA_VERSION, Corpus, CorpusError, UnknownBucket,
                    case_hash, case_size, versions)
from corpus import store as store_mod
from tvmfuzz.cli import main
from fuzz.generate import generate
from fuzz.model import Program
from fuzz.signature import signature, signature_id

ROOT = Path(__file__).resolve().parents[1]
V = {"tvm_version": "0.27.0.post1", "tvmfuzz_version": "0.1.0"}


def outcome(message="Check failed: x == 3", kind="crash", stage="build", rate=(2, 3),
            failing_pass="FuseOps", with_signature=True, **kw):
    o = {"verdict": "fail", "kind": kind, "stage": stage, "error_type": "InternalError",
         "message": message, "throw_site": "src/relax/op/op.cc:42",
         "detail": "Traceback (most recent call last):\n  File x\nInternalError: " + message,
         "seconds": 0.1, "target": "llvm -opt-level=2",
         "extra": {"variant": {"target": "llvm", "opt_level": 2},
                   "failing_pass": failing_pass}, **kw}
    if rate:
        o["reproduction"] = {"reproduced": rate[0], "replays": rate[1],
                             "rate": round(rate[0] / rate[1], 3)}
    if with_signature:
        o["signature"] = signature(o)
    return o


def files(root: Path, pattern="*") -> list[Path]:
    return sorted((root / "cases").glob(f"*/{pattern}"))


def test_an_outcome_is_stored_as_its_json(tmp_path):
    """A typed Outcome (what campaigns pass) and its to_json() (an outcome file written
    before) make the same bucket and the same stored row."""
    from fuzz.outcome import Outcome

    typed = Outcome.from_json(outcome())
    assert typed.reproduction == {"reproduced": 2, "replays": 3, "rate": 0.667}
    a, b = Corpus(tmp_path / "a"), Corpus(tmp_path / "b")
    assert a.add_finding(generate(1), typed, script="# s", now=1.0, **V) == \
        b.add_finding(generate(1), typed.to_json(), script="# s", now=1.0, **V)
    rows = [[tuple(r) for r in c._db.execute("SELECT * FROM findings")] for c in (a, b)]
    assert rows[0] == rows[1]
    assert a.findings()[0]["outcome"] == typed.to_json()


def test_add_buckets_by_signature_and_queries(tmp_path):
    c = Corpus(tmp_path / "c")
    assert c.integrity_check() == "ok" and c.schema_version == SCHEMA_VERSION
    mode = c._db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    a, b = outcome("Check failed: x == 3"), outcome("Segfault in 0x7f12", kind="numeric",
                                                     stage="compare", rate=None)
    p1, p2, p3 = generate(1), generate(2), generate(3)
    bid, new = c.add_finding(p1, a, script="# script 1", now=1000.0, **V)
    assert new and bid == signature_id(a["signature"]) and len(bid) == 12
    # the same signature with other numbers is the same bucket; computed when absent
    again = outcome("Check failed: x == 7", with_signature=False)
    assert c.add_finding(p2, again, now=2000.0, **V) == (bid, False)
    bid_b, new_b = c.add_finding(p3, b, now=1500.0, **V)
    assert new_b and bid_b != bid

    listed = c.buckets()
    assert [x["id"] for x in listed] == [bid, bid_b]          # most frequent first
    top = listed[0]
    assert top["count"] == 2 and top["kind"] == "crash" and top["stage"] == "build"
    assert top["first_seen"] == "1970-01-01T00:16:40Z"
    assert top["last_seen"] == "1970-01-01T00:33:20Z"
    assert top["reproduction_rate"] == round(4 / 6, 3) and top["tvm_version"] == V["tvm_version"]
    assert listed[1]["reproduction_rate"] is None
    smaller = min((p1, p2), key=case_size)
    assert top["representative"] == case_hash(smaller)

    detail = c.bucket(bid[:5])                                  # a unique prefix will do
    assert detail["id"] == bid and detail["kept"] == 2
    assert detail["case"] == json.loads(smaller.dumps())
    assert detail["outcome"]["signature"] == a["signature"]
    assert {f["case_hash"] for f in detail["findings"]} == {case_hash(p1), case_hash(p2)}
    f1 = next(f for f in detail["findings"] if f["case_hash"] == case_hash(p1))
    assert f1["failing_pass"] == "FuseOps" and f1["target"] == "llvm -opt-level=2"
    assert f1["variant"] == {"target": "llvm", "opt_level": 2} and f1["seed"] == 1
    assert f1["tvmfuzz_version"] == "0.1.0" and f1["repro_rate"] == round(2 / 3, 3)
    assert f1["signature_id"] == bid and f1["has_script"]
    with pytest.raises(UnknownBucket):
        c.bucket("ffffffffffff")

    # content-addressed, canonical JSON, script beside it, nothing temporary left
    for p in (p1, p2, p3):
        h = hashlib.sha256(p.dumps().encode()).hexdigest()
        path = tmp_path / "c" / "cases" / h[:2] / f"{h}.json"
        assert path.read_text() == p.dumps()
        assert c.case(h).dumps() == p.dumps() and c.case(h[:10]).dumps() == p.dumps()
    assert c.script_path(case_hash(p1)).read_text() == "# script 1"
    assert not c.script_path(case_hash(p2)).exists()
    assert (detail["script_path"] is None) == (smaller is p2)
    assert not files(tmp_path / "c", ".tmp-*")
    c.close()

    with Corpus(tmp_path / "c") as again_open:                # persists across a reopen
        assert [x["count"] for x in again_open.buckets()] == [2, 1]


def test_repeat_of_a_case_is_one_file_and_one_finding(tmp_path):
    c = Corpus(tmp_path)
    p = generate(5)
    c.add_finding(p, outcome(), **V)
    c.add_finding(p, outcome(), script="# later", **V)         # a script may come later
    (b,) = c.buckets()
    assert b["count"] == 2
    (f,) = c.findings()
    assert f["count"] == 2 and f["has_script"]
    assert len(files(tmp_path, "*.json")) == 1 and len(files(tmp_path, "*.py")) == 1


def test_script_failure_is_recorded_not_stored(tmp_path):
    from worker.sandbox_runner import ScriptFailure

    c = Corpus(tmp_path)
    bid, _ = c.add_finding(generate(6), outcome(), script=ScriptFailure("printer crashed"), **V)
    b = c.bucket(bid)
    assert b["script_path"] is None and b["outcome"]["script_error"] == "printer crashed"
    assert not files(tmp_path, "*.py")


def test_bucket_keeps_the_smallest_cases_up_to_the_cap(tmp_path):
    c = Corpus(tmp_path)
    progs = [generate(s) for s in range(MAX_FINDINGS_PER_BUCKET + 12)]
    for p in progs:
        bid, _ = c.add_finding(p, outcome(), script="# s", **V)
    b = c.bucket(bid)
    assert b["count"] == len(progs) and b["kept"] == MAX_FINDINGS_PER_BUCKET
    ranked = sorted(progs, key=lambda p: case_size(p) + (case_hash(p),))
    keep = {case_hash(p) for p in ranked[:MAX_FINDINGS_PER_BUCKET]}
    assert {f["case_hash"] for f in b["findings"]} == keep
    assert b["representative"] == case_hash(ranked[0])
    # the dropped and evicted cases left no files behind
    assert {p.stem for p in files(tmp_path, "*.json")} == keep
    assert {p.stem for p in files(tmp_path, "*.py")} == keep
    assert c.gc() == 0


def test_passing_outcome_is_not_a_finding(tmp_path):
    with pytest.raises(ValueError):
        Corpus(tmp_path).add_finding(generate(1), {"verdict": "pass"}, **V)


def test_campaign_state_persists(tmp_path):
    c = Corpus(tmp_path)
    assert c.get_state("campaign/next_seed") is None
    assert c.get_state("campaign/next_seed", 0) == 0
    c.set_state("campaign/next_seed", 128)
    c.set_state("campaign/next_seed", 136)
    c.set_state("campaign/config", {"mode": None, "replays": 3})
    c.close()
    c = Corpus(tmp_path)
    assert c.get_state("campaign/next_seed") == 136
    assert c.get_state("campaign/config") == {"mode": None, "replays": 3}


def test_versions_come_from_metadata_without_importing_tvm():
    code = ("import sys, corpus, tvmfuzz.cli; v = corpus.versions(); "
            "assert 'tvm' not in sys.modules, 'tvm imported'; print(v['tvm'], v['tvmfuzz'])")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    from importlib.metadata import version
    assert r.stdout.split() == [version("apache-tvm"), version("tvmfuzz")]
    assert versions()["tvm"] == version("apache-tvm")


def test_default_versions_are_the_installed_ones(tmp_path):
    c = Corpus(tmp_path)
    c.add_finding(generate(1), outcome())
    (f,) = c.findings()
    assert (f["tvm_version"], f["tvmfuzz_version"]) == (versions()["tvm"], versions()["tvmfuzz"])


# --- failure modes ---------------------------------------------------------------------------

def test_unwritable_directory_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("not a directory")
    with pytest.raises(CorpusError, match="file.txt/corpus"):
        Corpus(blocker / "corpus")


def test_missing_corpus_is_not_created_when_only_reading(tmp_path):
    with pytest.raises(CorpusError, match="no corpus at"):
        Corpus(tmp_path / "nope", create=False)
    assert not (tmp_path / "nope").exists()


def test_not_a_database_is_a_clear_error(tmp_path):
    (tmp_path / "corpus.sqlite3").write_text("this is not SQLite" * 100)
    with pytest.raises(CorpusError, match="corpus.sqlite3"):
        Corpus(tmp_path)


def test_newer_schema_is_refused_and_old_one_migrated(tmp_path):
    db = sqlite3.connect(tmp_path / "corpus.sqlite3")
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(CorpusError, match="newer"):
        Corpus(tmp_path)

    calls = []
    migrations = dict(store_mod.MIGRATIONS)

    def v1_to_v2(db):
        calls.append(1)
        db.execute("CREATE TABLE extra (x)")

    other = tmp_path / "other"
    Corpus(other).close()                      # a store at the current schema
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
        mp.setattr(store_mod, "MIGRATIONS", {**migrations, SCHEMA_VERSION: v1_to_v2})
        c = Corpus(other)
        assert c.schema_version == SCHEMA_VERSION + 1 and calls == [1]
        c.close()
        Corpus(other).close()                  # already migrated: not run again
        assert calls == [1]


def test_failed_file_write_raises_and_leaves_the_store_consistent(tmp_path, monkeypatch):
    c = Corpus(tmp_path)
    first, _ = c.add_finding(generate(1), outcome("first"), **V)

    def no_space(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod.os, "fsync", no_space)
    with pytest.raises(CorpusError, match="No space left"):
        c.add_finding(generate(2), outcome("second"), script="# s", **V)
    with pytest.raises(CorpusError, match="No space left"):   # a repeat into a bucket too
        c.add_finding(generate(3), outcome("first"), **V)
    monkeypatch.undo()

    assert c.integrity_check() == "ok"
    assert [b["id"] for b in c.buckets()] == [first] and c.buckets()[0]["count"] == 1
    assert len(c.findings()) == 1
    assert not files(tmp_path, ".tmp-*")
    assert len(files(tmp_path, "*.json")) == 1
    c.add_finding(generate(2), outcome("second"), **V)         # and it still works after
    assert len(c.buckets()) == 2


def test_full_database_raises_and_rolls_back(tmp_path):
    c = Corpus(tmp_path)
    c.add_finding(generate(1), outcome("first"), **V)
    pages = c._db.execute("PRAGMA page_count").fetchone()[0]
    c._db.execute(f"PRAGMA max_page_count={pages}")            # SQLITE_FULL from now on
    big = outcome("second", detail="x" * 200_000)
    with pytest.raises(CorpusError, match="full"):
        c.add_finding(generate(2), big, **V)
    assert c.integrity_check() == "ok" and len(c.buckets()) == 1 and not c._db.in_transaction
    c.close()
    c = Corpus(tmp_path)
    assert len(c.buckets()) == 1
    assert c.gc() == 0          # the case file of the rolled-back add is not left behind


# --- other processes -------------------------------------------------------------------------

CHILD = textwrap.dedent("""
    import sys
    from corpus import Corpus
    from fuzz.generate import generate
    from fuzz.signature import signature

    import os, time
    root, first, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    c = Corpus(root)
    if len(sys.argv) > 4:            # a start line: wait for the go file
        print("ready", flush=True)
        while not os.path.exists(sys.argv[4]):
            time.sleep(0.005)
    for i in range(first, first + n):
        o = {"verdict": "fail", "kind": "crash", "stage": "build", "error_type": "E",
             "message": f"bug kind {chr(97 + i % 26)}{chr(97 + i // 26 % 26)}",
             "detail": "d" * 2000, "target": "llvm", "extra": {}}
        o["signature"] = signature(o)
        bid, new = c.add_finding(generate(i), o, script="# " + str(i) * 500,
                                 tvm_version="t", tvmfuzz_version="f")
        print(bid, i, flush=True)
""")


def _child(root, first, n, *go):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(first), str(n),
                             *map(str, go)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_sigkill_mid_add_loses_nothing_committed(tmp_path):
    child = _child(tmp_path, 0, 100_000)
    committed = []
    try:
        for line in child.stdout:
            committed.append(line.split())
            if len(committed) >= 40:
                break
        child.send_signal(signal.SIGKILL)      # while it is adding the next ones
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL, child.stderr.read()
    assert len(committed) >= 40
    c = Corpus(tmp_path)
    assert c.integrity_check() == "ok"
    kept = {(f["bucket_id"], f["seed"]) for f in c.findings()}
    for bid, seed in committed:
        assert (bid, int(seed)) in kept
        h = case_hash(generate(int(seed)))
        assert c.case(h).dumps() == generate(int(seed)).dumps()
    c.gc()                                     # a half-written case's files, if any
    assert not files(tmp_path, ".tmp-*")
    assert c.integrity_check() == "ok"
    c.add_finding(generate(10**6), outcome(), **V)   # and it is writable


def test_many_open_a_new_corpus_at_once(tmp_path):
    # Switching a new database to WAL takes a lock SQLite will not wait for; every opener
    # must still get a working corpus (CI once lost a campaign child to 'database is locked').
    errors = []
    for trial in range(100):
        root, gate = tmp_path / f"c{trial}", threading.Barrier(4)

        def opener():
            gate.wait()
            try:
                Corpus(root).close()
            except CorpusError as e:
                errors.append(str(e))
        kids = [threading.Thread(target=opener) for _ in range(4)]
        for k in kids:
            k.start()
        for k in kids:
            k.join()
    assert errors == []


def test_two_processes_add_at_once(tmp_path):
    n, go = 40, tmp_path / "go"
    root = tmp_path / "corpus"
    kids = [_child(root, 0, n, go), _child(root, 1000, n, go)]   # both also create the store
    for k in kids:
        line = k.stdout.readline().strip()
        assert line == "ready", line or k.communicate(timeout=60)[1]   # the child's error
    go.write_text("")
    for k in kids:
        out, err = k.communicate(timeout=120)
        assert k.returncode == 0, err
        assert len(out.splitlines()) == n
    c = Corpus(root)
    assert c.integrity_check() == "ok"
    assert len(c.findings()) == 2 * n
    assert sum(b["count"] for b in c.buckets()) == 2 * n
    assert {f["seed"] for f in c.findings()} == set(range(n)) | set(range(1000, 1000 + n))


# --- CLI -------------------------------------------------------------------------------------

@pytest.fixture
def filled(tmp_path):
    root = tmp_path / "corpus"
    c = Corpus(root)
    for s in range(3):
        c.add_finding(generate(s), outcome("Check failed: often"), script="# tvmscript " + str(s),
                      **V)
    bid, _ = c.add_finding(generate(9), outcome("rare", kind="numeric", stage="compare",
                                                rate=(1, 3)), **V)
    c.close()
    return root, bid


def test_cli_findings_lists_buckets(filled, capsys):
    root, rare = filled
    assert main(["findings", "--corpus", str(root), "--buckets"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["bucket", "count", "kind"]
    assert out[1].split()[1] == "3" and out[2].split()[:2] == [rare, "1"]
    assert "numeric" in out[2] and "1/3" in out[2] and "2 buckets, 4 findings" in out[-1]
    assert main(["findings", "--corpus", str(root), "--format", "json", "--buckets"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [b["count"] for b in data] == [3, 1] and data[1]["id"] == rare


def test_cli_findings_lists_bugs_with_both_levels(tmp_path, capsys):
    root = tmp_path / "corpus"
    c = Corpus(root)
    # one check failing with other values at two lines: two buckets, one bug
    for s, (msg, line) in enumerate([("Check failed: x == 3 (1 vs. 3) : at lv4", 42),
                                     ("Check failed: x == 3 (2 vs. 3) : at lv9", 47),
                                     ("Check failed: x == 3 (2 vs. 3) : at lv9", 47)]):
        o = outcome(msg, with_signature=False, throw_site=f"src/relax/op/op.cc:{line}")
        c.add_finding(generate(s), o, **V)
    other, _ = c.add_finding(generate(9), outcome("rare", kind="numeric", stage="compare"), **V)
    assert len(c.buckets()) == 3
    bugs = c.bugs()
    assert [(g["bucket_count"], g["count"]) for g in bugs] == [(2, 3), (1, 1)]
    assert bugs[0]["key"] == "crash | src/relax/op/op.cc | Check failed: x == N [pass FuseOps]"
    assert all(b["bug_id"] == bugs[0]["id"] for b in bugs[0]["buckets"])
    c.close()
    assert main(["findings", "--corpus", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["bug", "status", "buckets", "count"]
    assert out[1].split()[:4] == [bugs[0]["id"], "new", "2", "3"]
    assert out[-1] == "2 bugs (2 new, 0 known, 0 expected) in 3 buckets, 4 findings"
    assert main(["findings", "--corpus", str(root), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"] == {"bugs": 2, "new": 2, "known": 0, "expected": 0, "buckets": 3,
                              "findings": 4}
    assert [len(g["buckets"]) for g in data["bugs"]] == [2, 1]
    assert data["bugs"][1]["buckets"][0]["id"] == other
    assert {g["status"] for g in data["bugs"]} == {"new"} and data["bugs"][0]["status_reason"]
    # show takes a bug id (or prefix) as well as a bucket id
    assert main(["show", bugs[0]["id"][:7], "--corpus", str(root)]) == 0
    shown = capsys.readouterr().out
    assert f"bug        {bugs[0]['id']}" in shown and "in 2 buckets" in shown
    assert all(b["id"] in shown for b in bugs[0]["buckets"])
    assert main(["show", other, "--corpus", str(root), "--format", "json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert b["bug"]["id"] == bugs[1]["id"] and b["status"] == "new"


def test_cli_show_one_bucket(filled, capsys):
    root, rare = filled
    top = Corpus(root).buckets()[0]
    assert main(["show", top["id"], "--corpus", str(root)]) == 0
    out = capsys.readouterr().out
    case = str(Corpus(root).case_path(top["representative"]))
    assert top["signature"] in out and "0.27.0.post1" in out and case in out
    assert f"tvmfuzz replay {case}" in out and "# tvmscript" in out
    assert "src/relax/op/op.cc:42" in out and "Check failed: often" in out
    assert main(["show", rare[:6], "--corpus", str(root), "--format", "json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert b["id"] == rare and b["script_path"] is None and b["replay"].startswith("tvmfuzz replay")
    Program.from_json(b["case"])


def test_cli_unknown_bucket_or_corpus_is_one_line_exit_2(filled, tmp_path, capsys):
    root, _ = filled
    assert main(["show", "deadbeef0000", "--corpus", str(root)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tvmfuzz: error:") and "deadbeef0000" in err[0]
    assert main(["findings", "--corpus", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no corpus at" in err[0]


def test_failed_commit_removes_the_files_it_wrote(tmp_path, monkeypatch):
    c = Corpus(tmp_path)
    c.add_finding(generate(1), outcome("first"), **V)
    real = c._db

    class FailingCommit:
        in_transaction = property(lambda self: real.in_transaction)

        def execute(self, sql, *a):
            if sql == "COMMIT":
                raise sqlite3.OperationalError("disk I/O error")
            return real.execute(sql, *a)

    monkeypatch.setattr(c, "_db", FailingCommit())
    with pytest.raises(CorpusError, match="disk I/O error"):
        c.add_finding(generate(2), outcome("second"), script="# s", **V)
    monkeypatch.undo()
    assert len(c.buckets()) == 1 and c.integrity_check() == "ok"
    assert [p.stem for p in files(tmp_path, "*.json")] == [case_hash(generate(1))]
    assert not files(tmp_path, "*.py")
