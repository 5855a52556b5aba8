"""The outcome of judging one case: what every judge returns and every reader (corpus,
campaign, reducer, smoke, replay) receives, defined here below the worker and the corpus so
that neither owns it. On the wire (sandbox results, corpus rows, outcome.json) it travels as
``Outcome.to_json()``; ``Outcome.from_json`` gives the typed value back."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

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

    def to_json(self) -> dict:
        d = asdict(self)
        d["signature"] = signature(d)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Outcome":
        """The typed outcome of a ``to_json()`` dict (keys it does not know, such as the
        signature or a reproduction rate, are left out: they are derived or added later)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})

    @property
    def signature(self) -> str:
        return signature(asdict(self))

    @property
    def is_finding(self) -> bool:
        return self.verdict == "fail"
