"""The outcome of judging one case: what every judge returns and every reader (corpus,
campaign, reducer, smoke, replay) receives, defined here below the worker and the corpus so
that neither owns it. On the wire (sandbox results, corpus rows, outcome.json) it travels as
``Outcome.to_json()``; ``Outcome.from_json`` gives the typed value back. In-process everything
passes the ``Outcome`` itself and reads its attributes; JSON is made only where a value is
written (a file, the corpus, a Celery reply)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Optional

from .signature import signature

VERDICTS = ("pass", "fail", "invalid", "rejected")


@dataclass
class Outcome:
    # "pass"; "fail" (a finding); "invalid" (a generator defect: TVM refused to construct the
    # program); "rejected" (a near-valid mutant that verifier and build both refuse)
    verdict: str
    kind: str = ""               # crash, numeric, verifier_build, ...
    stage: str = ""
    error_type: str = ""
    message: str = ""
    throw_site: str = ""          # C++ file:line of TVM's throw, when there is one
    detail: str = ""
    seconds: float = 0.0
    target: str = "llvm"
    extra: dict = field(default_factory=dict)
    # How reliably a finding reproduced when replayed ({"reproduced", "replays"[, "rate"]}),
    # attached by a campaign or a reduction; None: not replayed (and absent from the JSON).
    reproduction: Optional[dict] = None

    def to_json(self) -> dict:
        """The wire and storage form: the fields, the derived ``signature``, then
        ``reproduction`` where there is one (the shape outcome files and corpus rows have
        always had)."""
        d = asdict(self)
        repro = d.pop("reproduction")
        d["signature"] = signature(d)
        if repro is not None:
            d["reproduction"] = repro
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Outcome":
        """The typed outcome of a ``to_json()`` dict (keys it does not know are left out: the
        signature is derived, a stored ``script_error`` belongs to the file)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})

    @property
    def signature(self) -> str:
        return signature(self)

    @property
    def is_finding(self) -> bool:
        return self.verdict == "fail"
