"""Is a candidate still the bug? Judged in the sandbox, cached by content hash.

Default test: the candidate fails with the original's signature (stage, kind, normalized
message, throw site, failing pass: ``fuzz.signature``) and, for a program-model case, belongs
to the original's root cause (``fuzz.triage.root_key``: a known-bug entry, or the bug key). A candidate that fails with another
signature is not accepted (the reducer would slip onto another bug) but is a discovery: it is
saved under ``slippage/`` with its outcome. With ``--interesting CMD`` (C-Reduce style) the
candidate is written to a file whose path is given to CMD; exit status 0 means interesting.
"""
from __future__ import annotations

import collections
import hashlib
import json
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

from fuzz.model import Program
from fuzz.outcome import Outcome
from worker import cases
from worker.sandbox_runner import outcome_from_result
from worker.script_guard import UnsafeScript
from fuzz.signature import signature_id
from fuzz.triage import root_key

from . import output
from .pool import SandboxPool


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- what is being reduced: a program-model case or TVMScript text -------------------------
# Both judge through worker.cases (the one job any consumer sends, the one judge the child
# runs); a subject adds what the reducer needs: the options its candidates keep.
class CaseSubject:
    """A program-model case (Relax or TIR), judged under its recorded variants."""

    suffix, label = ".json", "case"

    def text(self, prog: Program) -> str:
        return cases.kind_of(prog).text(prog)

    def job(self, prog: Program) -> Optional[dict]:
        return cases.job(prog)

    def save(self, d: Path, prog: Program) -> None:
        output.write_text(d / cases.kind_of(prog).file_name, self.text(prog))

    def root(self, prog: Program, outcome: Outcome) -> str:
        """The bug a candidate's failure belongs to (``fuzz.triage.root_key``): a known-bug
        entry's, an unvalidated layout's, else its bug key."""
        return root_key(prog, outcome)


class ScriptSubject:
    """TVMScript text, judged for llvm's default build or under recorded compile variants
    (a Relax case's, once its reduction moved to text), near-valid or not, with recorded
    inputs for parameters whose type does not say."""

    suffix, label = ".py", "script"

    def __init__(self, variants: Optional[list] = None, input_seed: int = 0,
                 near_valid: bool = False, by_name: Optional[dict] = None,
                 entry: Optional[str] = None):
        self.variants, self.input_seed, self.near_valid = variants, input_seed, near_valid
        self.by_name, self.entry = by_name, entry

    def text(self, text: str) -> str:
        return text

    def job(self, text: str) -> Optional[dict]:
        try:   # the guard refuses text that could run code on parse: it is never sent
            return cases.job(text, variants=self.variants, input_seed=self.input_seed,
                             near_valid=self.near_valid, by_name=self.by_name,
                             entry=self.entry)
        except (SyntaxError, UnsafeScript, ValueError):
            return None

    def save(self, d: Path, text: str) -> None:
        output.write_text(d / cases.kind_of(text).file_name, text)

    def root(self, text: str, outcome: Outcome) -> str:
        return ""   # text has no program model to match known bugs on: the signature decides


# --- the oracle ---------------------------------------------------------------------------
class Oracle:
    def __init__(self, subject, pool: SandboxPool, target_sig: str = "",
                 interesting_cmd: Optional[str] = None, slippage_dir: Optional[Path] = None,
                 timeout: Optional[float] = None, cmd_timeout: float = 300.0):
        self.subject, self.pool, self.target_sig = subject, pool, target_sig
        # The root cause the candidates must keep, beside the signature (set by the reducer
        # from the original's outcome): a new bug must not shrink into a known bug's case
        # with the same message, nor a known bug's case out of its entry.
        self.target_root = ""
        self.cmd = shlex.split(interesting_cmd) if interesting_cmd else None
        self.slippage_dir, self.timeout, self.cmd_timeout = slippage_dir, timeout, cmd_timeout
        self.cache: dict[str, tuple[bool, str]] = {}
        self.outcomes: dict[str, Outcome] = {}
        self.stats = collections.Counter()
        self.slipped: dict[str, str] = {}   # signature -> directory it was saved in

    # Outcomes in the sandbox (no cache: used for the stability check and final replays).
    def run(self, cands: list) -> list[Outcome]:
        jobs = [self.subject.job(c) for c in cands]
        live = [i for i, j in enumerate(jobs) if j is not None]
        self.stats["guard_refused"] += len(cands) - len(live)
        res = self.pool.run_all([jobs[i] for i in live], self.timeout)
        out = [Outcome("invalid", "refused", "guard", message="refused by the script guard")
               for _ in cands]
        for i, r in zip(live, res):
            out[i] = outcome_from_result(r)
        return out

    def outcome(self, cand) -> Outcome:
        key = sha256(self.subject.text(cand))
        if key not in self.outcomes:
            self.outcomes[key] = self.run([cand])[0]
        return self.outcomes[key]

    def test(self, cands: list) -> list[bool]:
        keys = [sha256(self.subject.text(c)) for c in cands]
        todo, seen = [], set()
        for c, k in zip(cands, keys):
            if k in self.cache or k in seen:
                self.stats["cache_hits"] += 1
            else:
                seen.add(k)
                todo.append((c, k))
        if todo:
            self.stats["calls"] += len(todo)
            verdicts = (self._by_cmd([c for c, _ in todo]) if self.cmd
                        else self._by_signature([c for c, _ in todo]))
            for (_, k), v in zip(todo, verdicts):
                self.cache[k] = v
        return [self.cache[k][0] for k in keys]

    def _by_signature(self, cands: list) -> list[tuple[bool, str]]:
        out = []
        for c, o in zip(cands, self.run(cands)):
            sig = o.signature
            self.outcomes[sha256(self.subject.text(c))] = o
            if o.verdict == "fail" and sig != self.target_sig:
                self._slipped(c, o)
            same = o.verdict == "fail" and sig == self.target_sig
            if same and self.target_root and self.subject.root(c, o) != self.target_root:
                self.stats["root_slippage"] += 1   # the same message from another root cause
                same = False
            out.append((same, sig))
        return out

    def _slipped(self, cand, outcome: Outcome) -> None:
        """Another bug met on the way: keep it (once per signature), count every meeting."""
        self.stats["slippage"] += 1
        sig = outcome.signature
        if self.slippage_dir is None or sig in self.slipped:
            return
        d = output.new_dir(self.slippage_dir, f"{outcome.kind}-{signature_id(sig)}")
        self.subject.save(d, cand)
        output.write_text(d / "outcome.json",
                          json.dumps(outcome.to_json(), indent=1, default=str))
        self.slipped[sig] = str(d)

    def _by_cmd(self, cands: list) -> list[tuple[bool, str]]:
        def one(c):
            with tempfile.TemporaryDirectory(prefix="tvmfuzz-reduce-") as d:
                path = Path(d) / f"candidate{self.subject.suffix}"
                path.write_text(self.subject.text(c))
                try:
                    r = subprocess.run(self.cmd + [str(path)], cwd=d, timeout=self.cmd_timeout,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    return (r.returncode == 0, f"exit {r.returncode}")
                except subprocess.TimeoutExpired:
                    return (False, "timeout")
                except OSError as e:
                    raise RuntimeError(f"cannot run the interestingness test: {e}")

        if self.pool.size > 1 and len(cands) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.pool.size) as ex:
                return list(ex.map(one, cands))
        return [one(c) for c in cands]
