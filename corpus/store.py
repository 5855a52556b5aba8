"""The corpus store: every finding of every campaign, bucketed by signature, safe to share.

Two levels: a *bucket* holds the findings of one signature; a *bug* holds the buckets of one
root cause (``fuzz.signature.bug_key``; each bucket stores its ``bug_id``). A bug's status
(new, known, expected: ``fuzz.triage``) is worked out when it is read, from its buckets'
representative cases and from the verdicts users record (``tvmfuzz triage``, table
``verdicts``).

Layout under ``ROOT``::

    corpus.sqlite3               buckets, findings, campaign state (SQLite, WAL mode)
    cases/ab/abcdef....json      a case, named by the sha256 of its canonical JSON
    cases/ab/abcdef....py        its TVMScript, when one was printed

A case file is content-addressed, so the same case found twice (or by two processes) is one
file, and the name checks the content. Files are written atomically (temp file in the same
directory, fsync, ``os.replace``), and only while the writer holds SQLite's write lock: file
creation and removal are serialized with the transactions that reference them, so ``gc`` and
bucket eviction never delete a file another process is about to reference.

Crash safety: an add is one ``BEGIN IMMEDIATE ... COMMIT`` transaction. A process killed in the
middle of one loses that finding (perhaps leaving an unreferenced case file, which ``gc``
removes); the database itself cannot be corrupted by a killed process.

This module imports nothing from TVM: the campaign's parent process uses it, and importing TVM
there costs seconds. Versions are passed in by the caller (``versions()`` reads the installed
package metadata without importing TVM).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from fuzz.model import STRUCTURAL_OPS, Program
from fuzz.outcome import Outcome
from fuzz.signature import BUG_KEY_VERSION, bug_id, bug_key
from fuzz.signature import signature as _signature
from fuzz.signature import cause_id, signature_id

DEFAULT_CORPUS = Path("runs/corpus")
DB_NAME = "corpus.sqlite3"
SCHEMA_VERSION = 2
MAX_FINDINGS_PER_BUCKET = 20     # distinct cases kept per bucket (the smallest ones)
BUSY_TIMEOUT_S = 30.0            # how long a writer waits for another process's transaction


class CorpusError(Exception):
    """The corpus cannot be opened or written (the message names the path)."""


class UnknownBucket(CorpusError, KeyError):
    def __str__(self) -> str:   # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown bucket"


class UnknownBug(CorpusError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown bug"


class UnknownCase(CorpusError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown case"


def versions() -> dict:
    """The installed TVM and tvmfuzz versions, from package metadata (TVM is not imported).

    In a campaign that tests another interpreter's TVM (``--tvm-python``) this is the wrong
    TVM: pass the version the sandbox reports instead."""
    from importlib.metadata import PackageNotFoundError, version

    def get(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "unknown"

    return {"tvm": get("apache-tvm"), "tvmfuzz": get("tvmfuzz")}


def case_hash(prog: Program) -> str:
    """The content address of a case: sha256 of its canonical JSON (``prog.dumps()``)."""
    return hashlib.sha256(prog.dumps().encode()).hexdigest()


def case_size(prog: Program) -> tuple[int, int, int]:
    """How big a case is, for picking a bucket's representative: op nodes first, then all
    nodes, then the JSON's length (a deterministic tie-break)."""
    if prog.ir == "seeded":   # TVMScript text (fuzz.seeded): its lines stand for nodes
        n = len(prog.text.splitlines())
        return n, n, len(prog.dumps())
    if prog.ir == "tir":   # statements stand for nodes
        from fuzz.tir.model import walk

        n = sum(1 for _ in walk(prog.body))
        return n, n, len(prog.dumps())
    nodes = [n for f in prog.functions for n in f.nodes()]
    ops = sum(n.op not in STRUCTURAL_OPS for n in nodes)
    return ops, len(nodes), len(prog.dumps())


def _iso(t: float) -> str:
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- schema ------------------------------------------------------------------------------
# MIGRATIONS[v] takes a store at user_version v to v + 1; opening a store runs the missing
# ones in one transaction. A change of schema appends a step here and bumps SCHEMA_VERSION;
# a store written by a newer tvmfuzz (user_version > SCHEMA_VERSION) is refused, not guessed.

def _run_script(db: sqlite3.Connection, sql: str) -> None:
    """Run ``;``-separated statements inside the caller's transaction (``executescript``
    would commit it first)."""
    for stmt in sql.split(";"):
        if stmt.strip():
            db.execute(stmt)


def _v0_to_v1(db: sqlite3.Connection) -> None:
    _run_script(db, """
    CREATE TABLE buckets (
        id               TEXT PRIMARY KEY,      -- signature_id(signature) (one per bug key: _bucket_for)
        signature        TEXT NOT NULL,
        verdict          TEXT NOT NULL,
        kind             TEXT NOT NULL,
        stage            TEXT NOT NULL,
        error_type       TEXT NOT NULL,
        failing_pass     TEXT NOT NULL,
        count            INTEGER NOT NULL,      -- findings with this signature, all kept or not
        first_seen       REAL NOT NULL,
        last_seen        REAL NOT NULL,
        reproduced       INTEGER NOT NULL,      -- sums over findings that were replayed
        replays          INTEGER NOT NULL,
        rep_case         TEXT NOT NULL,         -- the smallest case kept (a findings.case_hash)
        tvm_version      TEXT NOT NULL,         -- of the latest finding
        tvmfuzz_version  TEXT NOT NULL
    );
    CREATE TABLE findings (
        id               INTEGER PRIMARY KEY AUTOINCREMENT,
        bucket_id        TEXT NOT NULL REFERENCES buckets(id),
        case_hash        TEXT NOT NULL,
        signature        TEXT NOT NULL,
        signature_id     TEXT NOT NULL,
        kind             TEXT NOT NULL,
        stage            TEXT NOT NULL,
        failing_pass     TEXT NOT NULL,
        target           TEXT NOT NULL,         -- the variant's label (Outcome.target)
        variant          TEXT,                  -- JSON (Outcome.extra.variant)
        tvm_version      TEXT NOT NULL,
        tvmfuzz_version  TEXT NOT NULL,
        seed             INTEGER,
        reproduced       INTEGER,
        replays          INTEGER,
        repro_rate       REAL,
        n_ops            INTEGER NOT NULL,
        n_nodes          INTEGER NOT NULL,
        n_chars          INTEGER NOT NULL,
        has_script       INTEGER NOT NULL,
        outcome          TEXT NOT NULL,         -- the Outcome dict, JSON
        count            INTEGER NOT NULL,      -- times this very case gave this signature
        first_seen       REAL NOT NULL,
        last_seen        REAL NOT NULL,
        UNIQUE (bucket_id, case_hash)
    );
    CREATE INDEX findings_case ON findings(case_hash);
    CREATE TABLE state (
        key    TEXT PRIMARY KEY,
        value  TEXT NOT NULL                    -- JSON
    );
    """)


def _v1_to_v2(db: sqlite3.Connection) -> None:
    """Bugs: each bucket's bug id and key, and the verdicts users record per bug."""
    _run_script(db, """
    ALTER TABLE buckets ADD COLUMN bug_id TEXT NOT NULL DEFAULT '';   -- bug_id(outcome)
    ALTER TABLE buckets ADD COLUMN bug_key TEXT NOT NULL DEFAULT '';  -- bug_key(outcome)
    CREATE INDEX buckets_bug ON buckets(bug_id);
    CREATE TABLE verdicts (
        bug_id    TEXT PRIMARY KEY,
        verdict   TEXT NOT NULL,                -- known | not-a-bug
        note      TEXT NOT NULL,                -- the issue's URL, or why it is not a bug
        recorded  REAL NOT NULL
    );
    """)   # the bug ids are filled in by _rekey once the store is open (it reads the cases)


def _finding_key(outcome: dict, prog: Optional[Program]) -> str:
    """The bug key of one finding: ``fuzz.triage.root_key`` when its case can be read (a
    finding a known-bug entry explains is that entry's bug), else ``bug_key``."""
    from fuzz.triage import root_key

    outcome = dict(outcome, verdict=outcome.get("verdict", "fail"))
    if prog is not None:
        try:
            return root_key(prog, outcome)
        except Exception:  # noqa: BLE001 - a case the triage cannot read: by outcome alone
            pass
    return bug_key(outcome)


def _rekey(db: sqlite3.Connection, cases_dir: Optional[Path] = None) -> None:
    """Recompute every bucket's bug id and key from its representative finding (its outcome,
    and its case where ``cases_dir`` has it), inside the caller's transaction. A verdict a
    user recorded on a bug follows it to its new id when all of that bug's buckets land in
    one bug."""
    moved: dict[str, set] = {}
    for bid, sig, rep, old in db.execute(
            "SELECT id, signature, rep_case, bug_id FROM buckets").fetchall():
        outcome = db.execute("SELECT outcome FROM findings WHERE bucket_id=? ORDER BY "
                             "case_hash = ? DESC, id LIMIT 1", (bid, rep)).fetchone()
        outcome = outcome[0] if outcome else None
        prog = None
        if cases_dir is not None and rep:
            try:
                prog = Program.loads((cases_dir / rep[:2] / f"{rep}.json").read_text())
            except (OSError, ValueError, KeyError, TypeError):
                prog = None
        try:
            key = _finding_key(json.loads(outcome), prog) if outcome else ""
        except ValueError:
            key = ""
        key = key or f"signature | {sig}"   # no outcome kept: a bug of its own
        moved.setdefault(old, set()).add(bug_id(key))
        db.execute("UPDATE buckets SET bug_id=?, bug_key=? WHERE id=?", (bug_id(key), key, bid))
    for old, new in moved.items():
        if old and len(new) == 1 and old not in new:
            db.execute("UPDATE OR IGNORE verdicts SET bug_id=? WHERE bug_id=?", (new.pop(), old))
    db.execute("INSERT INTO state (key, value) VALUES ('bug_key_version', ?) "
               "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (str(BUG_KEY_VERSION),))


def _bucket_for(db: sqlite3.Connection, sig: str, key: str) -> str:
    """The bucket of a finding with signature ``sig`` and bug key ``key``: one per root cause.

    A signature's first bucket has the id ``signature_id(sig)``. A finding with the same
    signature and another bug key (a known bug's sibling next to a new one, two unrelated
    segfaults) is another root cause: its own bucket (``cause_id``), so the
    representative of one bucket never decides the status of the other's cases."""
    row = db.execute("SELECT bug_key FROM buckets WHERE id=?", (signature_id(sig),)).fetchone()
    return cause_id(sig, key, row[0] if row else None)


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {0: _v0_to_v1, 1: _v1_to_v2}
VERDICTS = ("known", "not-a-bug")


class Corpus:
    """A corpus store at ``root`` (created unless ``create=False``).

    One ``Corpus`` per process (a connection must not cross a fork); any number of processes
    may open the same root and add at once."""

    def __init__(self, root: Path | str = DEFAULT_CORPUS, create: bool = True,
                 timeout: float = BUSY_TIMEOUT_S):
        self.root = Path(root)
        self.db_path = self.root / DB_NAME
        self.cases_dir = self.root / "cases"
        self._created: list[Path] = []   # files the running write transaction created
        if not create and not self.db_path.exists():
            raise CorpusError(f"no corpus at {self.root} ({self.db_path} does not exist)")
        try:
            self.cases_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CorpusError(f"cannot create corpus directory {self.root}: "
                              f"{e.strerror or e}") from e
        if not os.access(self.root, os.W_OK | os.X_OK):
            raise CorpusError(f"corpus directory {self.root} is not writable")
        try:
            # isolation_level=None: no implicit transactions; each write is an explicit
            # BEGIN IMMEDIATE, which takes the write lock up front, so a concurrent writer
            # waits out the busy timeout instead of failing on a read-to-write upgrade.
            self._db = sqlite3.connect(str(self.db_path), timeout=timeout,
                                       isolation_level=None)
        except sqlite3.Error as e:
            raise CorpusError(f"cannot open corpus database {self.db_path}: {e}") from e
        try:
            mode = self._retry_locked(
                lambda: self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0], timeout)
            if mode.lower() != "wal":
                raise CorpusError(f"cannot put {self.db_path} in WAL mode (got {mode})")
            # WAL + synchronous=NORMAL: a commit is appended to the WAL without an fsync; the
            # WAL is fsynced at checkpoints. A killed *process* loses nothing committed (the
            # data is in the OS's page cache) and the database cannot be corrupted; only a
            # power cut or kernel crash can drop the last few commits, still without
            # corruption. For findings that is the right trade: FULL would fsync every add.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
            self._retry_locked(self._migrate, timeout)
        except sqlite3.DatabaseError as e:
            self._db.close()
            raise CorpusError(f"cannot use corpus database {self.db_path}: {e}") from e
        except CorpusError:
            self._db.close()
            raise

    # --- plumbing --------------------------------------------------------------------
    @staticmethod
    def _retry_locked(step: Callable[[], Any], timeout: float) -> Any:
        """Run ``step``, retrying while the database is locked. Two processes creating the
        same corpus at once both hold a shared lock while switching to WAL; SQLite answers
        one of them 'database is locked' at once, without its busy handler (waiting could
        deadlock), so the busy timeout alone does not cover the first open."""
        deadline = time.monotonic() + timeout
        pause = 0.005
        while True:
            try:
                return step()
            except (sqlite3.OperationalError, CorpusError) as e:
                if "locked" not in str(e) and "busy" not in str(e) \
                        or time.monotonic() >= deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "Corpus":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, body: Callable[[], Any]) -> Any:
        """Run ``body`` in one write transaction; any failure rolls it back entirely and is
        raised as CorpusError (OSError from a file write, SQLite's 'disk is full', ...)."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as e:
            raise CorpusError(f"cannot write corpus {self.db_path}: {e}") from e
        self._created: list[Path] = []
        try:
            result = body()
            db.execute("COMMIT")
            return result
        except BaseException as e:
            # Files this transaction created go first, while the write lock is still held
            # (no other writer can have started to reference them).
            for p in self._created:
                try:
                    p.unlink()
                except OSError:
                    pass
            if db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(e, CorpusError):
                raise
            if isinstance(e, OSError):
                raise CorpusError(f"cannot write to corpus {self.root}: "
                                  f"{e.strerror or e} ({e.filename or self.root})") from e
            if isinstance(e, sqlite3.Error):
                raise CorpusError(f"cannot write corpus {self.db_path}: {e}") from e
            raise

    def _migrate(self) -> None:
        def body():
            v = self._db.execute("PRAGMA user_version").fetchone()[0]
            if v > SCHEMA_VERSION:
                raise CorpusError(f"corpus {self.db_path} has schema {v}, newer than this "
                                  f"tvmfuzz's {SCHEMA_VERSION}: upgrade tvmfuzz")
            while v < SCHEMA_VERSION:
                MIGRATIONS[v](self._db)
                v += 1
                self._db.execute(f"PRAGMA user_version={v}")

        if self._db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            self._write(body)
        from fuzz.triage import rules_fingerprint

        rules = rules_fingerprint()
        if self.get_state("bug_key_version") != BUG_KEY_VERSION or \
                self.get_state("bug_rules") != rules:
            self._write(lambda: _rekey(self._db, self.cases_dir))
            self.set_state("bug_rules", rules)

    @property
    def schema_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def integrity_check(self) -> str:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0]

    # --- case files ------------------------------------------------------------------
    def case_path(self, h: str) -> Path:
        return self.cases_dir / h[:2] / f"{h}.json"

    def script_path(self, h: str) -> Path:
        return self.cases_dir / h[:2] / f"{h}.py"

    def _put_file(self, path: Path, text: str) -> None:
        """Write ``text`` at ``path`` atomically; content-addressed, so an existing file
        already holds it."""
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as f:
                os.fchmod(f.fileno(), 0o644)
                f.write(text.encode())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            self._created.append(path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        try:   # make the new name durable too (best effort: not every filesystem allows it)
            dfd = os.open(path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
        except OSError:
            pass

    def case(self, h: str) -> Program:
        """The case with hash ``h`` (a unique prefix is enough)."""
        h = self._resolve_case(h)
        try:
            return Program.loads(self.case_path(h).read_text())
        except FileNotFoundError as e:
            raise UnknownCase(f"case {h} is not in corpus {self.root}") from e
        except OSError as e:
            raise CorpusError(f"cannot read case {self.case_path(h)}: {e.strerror or e}") from e

    def _resolve_case(self, h: str) -> str:
        if len(h) == 64 or len(h) < 2:
            return h
        matches = sorted(p.stem for p in (self.cases_dir / h[:2]).glob(f"{h}*.json"))
        return matches[0] if len(matches) == 1 else h

    # --- findings --------------------------------------------------------------------
    def add_finding(self, prog: Program, outcome: Outcome | dict, script: Optional[str] = None,
                    *, tvm_version: Optional[str] = None, tvmfuzz_version: Optional[str] = None,
                    now: Optional[float] = None) -> tuple[str, bool]:
        """Store one failing case with its outcome (an ``Outcome`` with the campaign's
        ``reproduction``, or an outcome file written before, which is stored as it is, its
        signature included); return ``(bucket_id, new_bucket)``.

        ``script`` is the case's TVMScript (a ``ScriptFailure`` is recorded as the reason
        there is none). Versions default to ``versions()`` (package metadata of this
        interpreter). The whole add is one transaction."""
        # The corpus row is JSON: the outcome becomes its stored form here, and the columns
        # below are read from that form (the same whether it came typed or from a file).
        outcome = outcome.to_json() if isinstance(outcome, Outcome) else dict(outcome)
        sig = outcome.get("signature") or _signature(outcome)
        if not sig:
            raise ValueError("a passing outcome is not a finding (empty signature)")
        bid = signature_id(sig)
        key = _finding_key(outcome, prog) or f"signature | {sig}"
        if tvm_version is None or tvmfuzz_version is None:
            v = versions()
            tvm_version = tvm_version or v["tvm"]
            tvmfuzz_version = tvmfuzz_version or v["tvmfuzz"]
        text = prog.dumps()
        h = hashlib.sha256(text.encode()).hexdigest()
        size = case_size(prog)
        outcome = dict(outcome, signature=sig)
        if script is not None and type(script) is not str:   # ScriptFailure (a str subclass)
            outcome["script_error"] = str(script)
            script = None
        extra = outcome.get("extra") or {}
        repro = outcome.get("reproduction") or {}
        reproduced, replays = repro.get("reproduced"), repro.get("replays")
        rate = repro.get("rate")
        if rate is None and replays:
            rate = round(reproduced / replays, 3)
        variant = extra.get("variant")
        t = time.time() if now is None else now
        row = dict(
            bucket_id=bid, case_hash=h, signature=sig, signature_id=bid,
            kind=outcome.get("kind", ""), stage=outcome.get("stage", ""),
            failing_pass=extra.get("failing_pass", ""), target=outcome.get("target", ""),
            variant=None if variant is None else json.dumps(variant, sort_keys=True),
            tvm_version=tvm_version, tvmfuzz_version=tvmfuzz_version,
            seed=prog.meta.get("seed"), reproduced=reproduced, replays=replays,
            repro_rate=rate, n_ops=size[0], n_nodes=size[1], n_chars=size[2],
            has_script=int(script is not None),
            outcome=json.dumps(outcome, sort_keys=True, default=str),
            count=1, first_seen=t, last_seen=t)
        db = self._db
        evicted: list[str] = []

        def files():
            # Inside the transaction, after the decision to keep the case: a dropped case
            # leaves no file, and a failed write rolls the whole add back.
            self._put_file(self.case_path(h), text)
            if script is not None:
                self._put_file(self.script_path(h), script)

        def body():
            nonlocal bid
            bid = _bucket_for(db, sig, key)
            row["bucket_id"] = bid
            b = db.execute("SELECT rep_case FROM buckets WHERE id=?", (bid,)).fetchone()
            if b is None:
                db.execute(
                    "INSERT INTO buckets (id, signature, verdict, kind, stage, error_type, "
                    "failing_pass, count, first_seen, last_seen, reproduced, replays, "
                    "rep_case, tvm_version, tvmfuzz_version, bug_id, bug_key) "
                    "VALUES (?,?,?,?,?,?,?,1,?,?,?,?,?,?,?,?,?)",
                    (bid, sig, outcome.get("verdict", "fail"), row["kind"], row["stage"],
                     outcome.get("error_type", ""), row["failing_pass"], t, t,
                     reproduced or 0, replays or 0, h, tvm_version, tvmfuzz_version,
                     bug_id(key), key))
                self._insert_finding(row)
                files()
                return True
            db.execute(
                "UPDATE buckets SET count=count+1, last_seen=max(last_seen, ?), "
                "first_seen=min(first_seen, ?), reproduced=reproduced+?, replays=replays+?, "
                "tvm_version=?, tvmfuzz_version=? WHERE id=?",
                (t, t, reproduced or 0, replays or 0, tvm_version, tvmfuzz_version, bid))
            same = db.execute("SELECT id FROM findings WHERE bucket_id=? AND case_hash=?",
                              (bid, h)).fetchone()
            if same is not None:
                db.execute("UPDATE findings SET count=count+1, last_seen=max(last_seen, ?), "
                           "has_script=max(has_script, ?) WHERE id=?",
                           (t, row["has_script"], same[0]))
                files()   # a script may come with a repeat when the first add had none
                return False
            kept = db.execute("SELECT id, case_hash, n_ops, n_nodes, n_chars FROM findings "
                              "WHERE bucket_id=?", (bid,)).fetchall()
            if len(kept) >= MAX_FINDINGS_PER_BUCKET:
                # Keep the smallest cases: the new one replaces the largest, or is dropped
                # (the bucket's count still has it).
                largest = max(kept, key=lambda r: (r[2], r[3], r[4], r[1]))
                if (largest[2], largest[3], largest[4], largest[1]) <= size + (h,):
                    return False
                db.execute("DELETE FROM findings WHERE id=?", (largest[0],))
                evicted.append(largest[1])
            self._insert_finding(row)
            rep = db.execute("SELECT case_hash FROM findings WHERE bucket_id=? "
                             "ORDER BY n_ops, n_nodes, n_chars, case_hash LIMIT 1",
                             (bid,)).fetchone()[0]
            db.execute("UPDATE buckets SET rep_case=? WHERE id=?", (rep, bid))
            files()
            return False

        new = self._write(body)
        if evicted:
            try:
                self._write(lambda: self._remove_unreferenced(evicted))
            except CorpusError:
                pass   # an unreferenced file is only disk; gc() removes it later
        return bid, new

    def _insert_finding(self, row: dict) -> None:
        cols = list(row)
        self._db.execute(f"INSERT INTO findings ({', '.join(cols)}) "
                         f"VALUES ({', '.join('?' * len(cols))})", [row[c] for c in cols])

    def _remove_unreferenced(self, hashes) -> int:
        """Delete the files of cases no finding refers to (under the write lock: no other
        writer is between writing a case file and referencing it)."""
        n = 0
        for h in hashes:
            if self._db.execute("SELECT 1 FROM findings WHERE case_hash=? LIMIT 1",
                                (h,)).fetchone():
                continue
            for p in (self.case_path(h), self.script_path(h)):
                try:
                    p.unlink()
                    n += 1
                except FileNotFoundError:
                    pass
        return n

    def gc(self) -> int:
        """Remove case files no finding refers to (left by a killed add or an eviction) and
        stray temp files; return how many files were removed."""
        def body():
            hashes, n = set(), 0
            for p in self.cases_dir.glob("*/*"):
                if p.name.startswith(".tmp-"):
                    p.unlink(missing_ok=True)
                    n += 1
                elif p.suffix in (".json", ".py"):
                    hashes.add(p.stem)
            return n + self._remove_unreferenced(sorted(hashes))

        return self._write(body)

    # --- queries ---------------------------------------------------------------------
    _BUCKET_COLS = ("id, signature, verdict, kind, stage, error_type, failing_pass, count, "
                    "first_seen, last_seen, reproduced, replays, rep_case, tvm_version, "
                    "tvmfuzz_version, bug_id")

    def _bucket_dict(self, r: tuple) -> dict:
        (bid, sig, verdict, kind, stage, err, fpass, count, first, last, reproduced, replays,
         rep, tvm_v, fuzz_v, bug) = r
        return {"id": bid, "signature": sig, "verdict": verdict, "kind": kind, "stage": stage,
                "error_type": err, "failing_pass": fpass, "count": count,
                "first_seen": _iso(first), "last_seen": _iso(last),
                "reproduction_rate": round(reproduced / replays, 3) if replays else None,
                "reproduced": reproduced, "replays": replays,
                "representative": rep, "tvm_version": tvm_v, "tvmfuzz_version": fuzz_v,
                "bug_id": bug}

    def buckets(self) -> list[dict]:
        """Every bucket, most frequent first (then most recently seen)."""
        rows = self._db.execute(f"SELECT {self._BUCKET_COLS} FROM buckets "
                                "ORDER BY count DESC, last_seen DESC, id").fetchall()
        return [self._bucket_dict(r) for r in rows]

    def __len__(self) -> int:
        return self._db.execute("SELECT count(*) FROM buckets").fetchone()[0]

    def resolve_bucket(self, bid: str) -> str:
        """The full id of bucket ``bid`` (or of the one bucket whose id starts with it)."""
        bid = (bid or "").strip().lower()
        if bid and all(c in "0123456789abcdef" for c in bid):
            rows = self._db.execute("SELECT id FROM buckets WHERE id >= ? AND id < ? "
                                    "ORDER BY id LIMIT 2", (bid, bid + "g")).fetchall()
            if len(rows) == 1:
                return rows[0][0]
            if len(rows) > 1:
                exact = [r[0] for r in rows if r[0] == bid]
                if exact:
                    return exact[0]
                raise UnknownBucket(f"bucket id {bid!r} is ambiguous in corpus {self.root}")
        raise UnknownBucket(f"no bucket {bid!r} in corpus {self.root}")

    def bucket(self, bid: str) -> dict:
        """One bucket with its findings (smallest first), the representative's case JSON,
        paths, script path (None when no TVMScript was stored) and outcome."""
        bid = self.resolve_bucket(bid)
        r = self._db.execute(f"SELECT {self._BUCKET_COLS} FROM buckets WHERE id=?",
                             (bid,)).fetchone()
        b = self._bucket_dict(r)
        findings = self._finding_rows(
            "SELECT * FROM findings WHERE bucket_id=? ORDER BY n_ops, n_nodes, n_chars, "
            "case_hash", (bid,))
        rep = b["representative"]
        b["findings"] = findings
        b["kept"] = len(findings)
        b["tvm_versions"] = sorted({f["tvm_version"] for f in findings})
        b["case_path"] = str(self.case_path(rep))
        sp = self.script_path(rep)
        b["script_path"] = str(sp) if sp.exists() else None
        try:
            b["case"] = json.loads(self.case_path(rep).read_text())
        except (OSError, ValueError):
            b["case"] = None
        b["outcome"] = next((f["outcome"] for f in findings if f["case_hash"] == rep), {})
        b["bug_key"] = self._db.execute("SELECT bug_key FROM buckets WHERE id=?",
                                        (bid,)).fetchone()[0]
        bug = self.bugs(only=b["bug_id"])[0]
        mine = next(x for x in bug["buckets"] if x["id"] == bid)
        b.update(status=mine["status"], status_reason=mine["status_reason"],
                 mutations=mine["mutations"])
        b["bug"] = {k: bug[k] for k in ("id", "key", "status", "status_reason", "verdict",
                                         "count", "bucket_count")}
        return b

    def _finding_rows(self, sql: str, args: tuple = ()) -> list[dict]:
        cur = self._db.execute(sql, args)
        cols = [d[0] for d in cur.description]
        out = []
        for r in cur.fetchall():
            d = dict(zip(cols, r))
            d["outcome"] = json.loads(d["outcome"])
            d["variant"] = None if d["variant"] is None else json.loads(d["variant"])
            d["first_seen"], d["last_seen"] = _iso(d["first_seen"]), _iso(d["last_seen"])
            d["has_script"] = bool(d["has_script"])
            out.append(d)
        return out

    def findings(self, bucket_id: Optional[str] = None) -> list[dict]:
        """Kept findings (all, or one bucket's), in the order they were added."""
        if bucket_id is None:
            return self._finding_rows("SELECT * FROM findings ORDER BY id")
        return self._finding_rows("SELECT * FROM findings WHERE bucket_id=? ORDER BY id",
                                  (self.resolve_bucket(bucket_id),))

    # --- bugs: buckets grouped by root cause ------------------------------------------
    def _rep_status(self, rep: str, outcome_json: Optional[str]) -> tuple[str, str, list]:
        """(status, reason, mutations) of a bucket from its representative case."""
        from fuzz.triage import NEW, auto_status, mutations

        try:
            prog = Program.loads(self.case_path(rep).read_text())
        except (OSError, ValueError, KeyError, TypeError):
            return NEW, "the representative case file is missing or unreadable", []
        try:
            outcome = json.loads(outcome_json) if outcome_json else {}
        except ValueError:
            outcome = {}
        status, why = auto_status(prog, outcome)
        return status, why, mutations(prog)

    def bugs(self, only: Optional[str] = None) -> list[dict]:
        """Every bug (or bug ``only``) with its buckets (most frequent first) and status, new
        bugs first, then known, then expected; within a status the most frequent first."""
        from fuzz.triage import ORDER, combine

        rows = self._db.execute(
            f"SELECT {', '.join('b.' + c.strip() for c in self._BUCKET_COLS.split(','))}, "
            "b.bug_key, f.outcome FROM buckets b LEFT JOIN findings f "
            "ON f.bucket_id = b.id AND f.case_hash = b.rep_case "
            + ("WHERE b.bug_id = ? " if only is not None else "")
            + "ORDER BY b.count DESC, b.last_seen DESC, b.id",
            () if only is None else (only,)).fetchall()
        verdicts = self.verdicts()
        groups: dict[str, dict] = {}
        for r in rows:
            b = self._bucket_dict(r[:16])
            status, why, muts = self._rep_status(b["representative"], r[17])
            b.update(status=status, status_reason=why, mutations=muts)
            g = groups.setdefault(b["bug_id"], {"id": b["bug_id"], "key": r[16], "buckets": []})
            g["buckets"].append(b)
        out = []
        for g in groups.values():
            bs = g["buckets"]
            status, why = combine([(b["status"], b["status_reason"]) for b in bs],
                                  verdicts.get(g["id"]))
            reproduced, replays = sum(b["reproduced"] for b in bs), sum(b["replays"] for b in bs)
            g.update(status=status, status_reason=why, verdict=verdicts.get(g["id"]),
                     kind=bs[0]["kind"], count=sum(b["count"] for b in bs),
                     bucket_count=len(bs), first_seen=min(b["first_seen"] for b in bs),
                     last_seen=max(b["last_seen"] for b in bs), reproduced=reproduced,
                     replays=replays,
                     reproduction_rate=round(reproduced / replays, 3) if replays else None,
                     representative_bucket=bs[0]["id"], signature=bs[0]["signature"])
            out.append(g)
        out.sort(key=lambda g: g["id"])
        out.sort(key=lambda g: g["last_seen"], reverse=True)
        out.sort(key=lambda g: (ORDER.get(g["status"], 0), -g["count"]))
        return out

    def resolve_bug(self, bug: str) -> str:
        """The full id of bug ``bug`` (or of the one bug whose id starts with it)."""
        bug = (bug or "").strip().lower()
        if bug and all(c in "0123456789abcdef" for c in bug):
            rows = self._db.execute("SELECT DISTINCT bug_id FROM buckets WHERE bug_id >= ? AND "
                                    "bug_id < ? ORDER BY bug_id LIMIT 2",
                                    (bug, bug + "g")).fetchall()
            if len(rows) == 1 or (rows and rows[0][0] == bug):
                return rows[0][0]
            if len(rows) > 1:
                raise UnknownBug(f"bug id {bug!r} is ambiguous in corpus {self.root}")
        raise UnknownBug(f"no bug {bug!r} in corpus {self.root}")

    def bug(self, bug: str) -> dict:
        """One bug (an id or a unique prefix of one) with its buckets and status."""
        return self.bugs(only=self.resolve_bug(bug))[0]

    def resolve(self, ident: str) -> tuple[str, str]:
        """("bucket", id) or ("bug", id) for a bucket or bug id (or a unique prefix of one);
        UnknownBucket when it names neither, or is a prefix of both."""
        hits = []
        for what, resolve in (("bucket", self.resolve_bucket), ("bug", self.resolve_bug)):
            try:
                hits.append((what, resolve(ident)))
            except KeyError as e:
                if "ambiguous" in str(e):
                    raise UnknownBucket(str(e))
        exact = [h for h in hits if h[1] == (ident or "").strip().lower()]
        if len(exact) == 1 or len(hits) == 1:
            return (exact or hits)[0]
        if hits:
            raise UnknownBucket(f"id {ident!r} is ambiguous in corpus {self.root}: a bucket's "
                                "and a bug's ids both start with it")
        raise UnknownBucket(f"no bucket or bug {ident!r} in corpus {self.root}")

    def bug_of(self, bucket_id: str) -> str:
        return self._db.execute("SELECT bug_id FROM buckets WHERE id=?",
                                (self.resolve_bucket(bucket_id),)).fetchone()[0]

    def set_verdict(self, bug: str, verdict: Optional[str], note: str = "",
                    now: Optional[float] = None) -> str:
        """Record a user's verdict on a bug ("known" with the issue's URL, "not-a-bug" with the
        reason), or forget it (``verdict=None``); return the bug's full id."""
        bug = self.resolve_bug(bug)
        if verdict is not None and verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}")
        t = time.time() if now is None else now
        if verdict is None:
            self._write(lambda: self._db.execute("DELETE FROM verdicts WHERE bug_id=?", (bug,)))
        else:
            self._write(lambda: self._db.execute(
                "INSERT INTO verdicts (bug_id, verdict, note, recorded) VALUES (?,?,?,?) "
                "ON CONFLICT(bug_id) DO UPDATE SET verdict=excluded.verdict, "
                "note=excluded.note, recorded=excluded.recorded", (bug, verdict, note, t)))
        return bug

    def verdicts(self) -> dict[str, dict]:
        """bug id -> {"verdict", "note", "recorded"} for every verdict users recorded."""
        return {b: {"verdict": v, "note": n, "recorded": _iso(t)} for b, v, n, t in
                self._db.execute("SELECT bug_id, verdict, note, recorded FROM verdicts")}

    # --- campaign state --------------------------------------------------------------
    def get_state(self, key: str, default: Any = None) -> Any:
        r = self._db.execute("SELECT value FROM state WHERE key=?", (key,)).fetchone()
        return default if r is None else json.loads(r[0])

    def set_state(self, key: str, value: Any) -> None:
        text = json.dumps(value, sort_keys=True)
        self._write(lambda: self._db.execute(
            "INSERT INTO state (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, text)))


# --- reports (the text the ``findings`` and ``show`` commands print) ------------------------

def representative(bucket_id: str, corpus_dir=None) -> dict:
    """A bucket (an id or a unique prefix of one) whose representative case file exists, for a
    command given a bucket id instead of a file; CorpusError with a one-line reason if not."""
    where = corpus_dir or DEFAULT_CORPUS
    try:
        with Corpus(Path(where), create=False) as c:
            b = c.bucket(bucket_id)
    except KeyError as e:   # UnknownBucket
        raise CorpusError(f"{bucket_id}: no such file, and {e}")
    except CorpusError as e:
        raise CorpusError(f"{bucket_id}: no such file (and no corpus to look it up in: {e})")
    if not b.get("case"):
        raise CorpusError(f"bucket {b['id']}: its representative case file is missing")
    return b


def _rate(b: dict) -> str:
    r = b.get("reproduction_rate")
    return "-" if r is None else f"{b['reproduced']}/{b['replays']}"


def format_buckets(buckets: list[dict], width: int = 120) -> str:
    """A table of buckets (``Corpus.buckets()``), one line each."""
    if not buckets:
        return "no findings"
    head = ("bucket", "count", "kind", "stage", "repro", "last seen", "signature")
    rows = [(b["id"], str(b["count"]), b["kind"] or "-", b["stage"] or "-", _rate(b),
             b["last_seen"].replace("T", " ")[:16], b["signature"]) for b in buckets]
    w = [max(len(r[i]) for r in rows + [head]) for i in range(6)]
    room = max(20, width - sum(w) - 2 * 6)

    def line(r):
        sig = r[6] if len(r[6]) <= room else r[6][:room - 3] + "..."
        return "  ".join([r[0].ljust(w[0]), r[1].rjust(w[1])]
                         + [r[i].ljust(w[i]) for i in range(2, 6)] + [sig]).rstrip()

    total = sum(b["count"] for b in buckets)
    return "\n".join([line(head)] + [line(r) for r in rows]
                     + [f"{len(buckets)} buckets, {total} findings"])


def _status_counts(bugs: list[dict]) -> str:
    from fuzz.triage import STATUSES

    return ", ".join(f"{sum(g['status'] == s for g in bugs)} {s}" for s in STATUSES)


def format_bugs(bugs: list[dict], width: int = 160) -> str:
    """A table of bugs (``Corpus.bugs()``), new first: one line each (the bug key without its
    kind, which has a column), and for a known or expected bug a second line with the
    reason."""
    if not bugs:
        return "no findings"
    head = ("bug", "status", "buckets", "count", "kind", "repro", "last seen", "bug key")
    rows = [(g["id"], g["status"], str(g["bucket_count"]), str(g["count"]), g["kind"] or "-",
             _rate(g), g["last_seen"].replace("T", " ")[:16],
             g["key"][len(g["kind"]) + 3:] if g["key"].startswith(f"{g['kind']} | ")
             else g["key"]) for g in bugs]
    w = [max(len(r[i]) for r in rows + [head]) for i in range(7)]
    room = max(20, width - sum(w) - 2 * 7)

    def cut(text, n):
        return text if len(text) <= n else text[:n - 3] + "..."

    def line(r):
        return "  ".join([r[0].ljust(w[0]), r[1].ljust(w[1]), r[2].rjust(w[2]),
                          r[3].rjust(w[3])] + [r[i].ljust(w[i]) for i in range(4, 7)]
                         + [cut(r[7], room)]).rstrip()

    out = [line(head)]
    for g, r in zip(bugs, rows):
        out.append(line(r))
        if g["status"] != "new":
            out.append(" " * (w[0] + 2) + cut(g["status_reason"], max(20, width - w[0] - 2)))
    n_buckets = sum(g["bucket_count"] for g in bugs)
    total = sum(g["count"] for g in bugs)
    return "\n".join(out + [f"{len(bugs)} bugs ({_status_counts(bugs)}) in {n_buckets} "
                            f"buckets, {total} findings"])


def format_bug(g: dict, width: int = 120) -> str:
    """One bug (``Corpus.bug()``) for a person: its key, status and reason, its buckets."""
    out = [f"bug        {g['id']}",
           f"key        {g['key']}",
           f"status     {g['status']}: {g['status_reason']}"]
    if g.get("verdict"):
        v = g["verdict"]
        out.append(f"verdict    {v['verdict']} ({v['note']}), recorded {v['recorded']}")
    out += [f"count      {g['count']} findings in {g['bucket_count']} buckets",
            f"seen       first {g['first_seen']}, last {g['last_seen']}",
            "reproduced " + (f"{g['reproduced']}/{g['replays']} replays" if g["replays"]
                             else "not replayed")]
    muts = list(dict.fromkeys(m for b in g["buckets"] for m in b.get("mutations") or []))
    out += [f"mutation   {m}" for m in muts[:5]]
    from fuzz.signature import short

    out += ["", f"buckets ({len(g['buckets'])}, most frequent first: bucket, count, status, "
                "signature):"]
    out += [f"  {b['id']}  {b['count']:5d}  {b.get('status', '-'):8s}  "
            f"{short(b['signature'], max(40, width - 36))}" for b in g["buckets"]]
    out += ["", f"show one with `tvmfuzz show BUCKET`; the most frequent is "
                f"{g['representative_bucket']}"]
    return "\n".join(out)


def format_bucket(b: dict, detail_lines: int = 40) -> str:
    """One bucket (``Corpus.bucket()``) for a person: what failed, where, and how to replay."""
    o = b.get("outcome") or {}
    bug = b.get("bug") or {}
    out = [f"bucket     {b['id']}",
           f"signature  {b['signature']}"]
    if bug:
        out += [f"bug        {bug['id']} ({bug['bucket_count']} buckets, {bug['count']} "
                f"findings): {bug['key']}",
                f"status     {bug['status']}: {bug['status_reason']}"]
    out += [f"mutation   {m}" for m in b.get("mutations") or []]
    out += [
        f"verdict    {b['verdict']}  kind {b['kind'] or '-'}  stage {b['stage'] or '-'}"
        + (f"  pass {b['failing_pass']}" if b.get("failing_pass") else ""),
        f"count      {b['count']} findings, {b['kept']} distinct cases kept",
        f"seen       first {b['first_seen']}, last {b['last_seen']}",
        "reproduced " + (f"{b['reproduced']}/{b['replays']} replays "
                         f"({b['reproduction_rate']:.0%})" if b["replays"] else "not replayed"),
        f"versions   tvm {', '.join(b['tvm_versions']) or b['tvm_version']}, "
        f"tvmfuzz {b['tvmfuzz_version']}",
        f"target     {o.get('target') or '-'}",
        f"case       {b['case_path']}",
        f"script     {b['script_path'] or '(none stored)'}"
        + (f"  ({o['script_error']})" if o.get("script_error") else ""),
        f"error      {o.get('error_type') or '-'}: {o.get('message') or ''}".rstrip(),
        f"throw site {o.get('throw_site') or '-'}",
        f"replay     tvmfuzz replay {b['case_path']}"]
    detail = (o.get("detail") or "").rstrip()
    if detail:
        lines = detail.splitlines()
        if len(lines) > detail_lines:
            lines = [f"... ({len(lines) - detail_lines} lines above)"] + lines[-detail_lines:]
        out += ["", "detail:"] + ["  " + ln for ln in lines]
    if b.get("script_path"):
        try:
            script = Path(b["script_path"]).read_text()
        except OSError as e:
            script = f"(cannot read: {e.strerror or e})"
        out += ["", "TVMScript:", script.rstrip()]
    return "\n".join(out)
