"""A seeded case: a TVMScript seed module and how to mutate it, as plain data.

``tvmfuzz run --seeds`` turns a TVMScript seed into cases of this kind: the seed's text, the
mutation seed and step count, and the compile variants. The mutations themselves
(``worker/seed_mutate.py``) need TVM and the text is hostile (parsing it evaluates Python), so
they run only in the sandbox child; this model imports nothing from TVM and never parses the
text. A finding is frozen to the module that failed (``mutant``: the mutated module's
TVMScript, set by the campaign from the outcome), so a replay, a reduction or another TVM
release judges exactly that module instead of mutating again.

It has the case interface of ``fuzz.model.Program`` (``to_json``/``dumps``/``loads``/``copy``,
``meta``, ``ir``, ``ops``, ``functions``), so the corpus, ``findings/`` and replay store it;
``Program.from_json`` returns one for ``"kind": "seeded"``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

SCHEMA_VERSION = 1


@dataclass
class SeededCase:
    seed_text: str                 # the seed module (TVMScript, checked by the script guard)
    seed_name: str = ""            # the seed's file name, for people
    steps: int = 2                 # IR mutations drawn (a mutation TVM refuses is skipped)
    mutant: Optional[str] = None   # frozen: the mutated module that failed, judged as it is
    # seed (the case seed: mutations, inputs), variants, mutations (applied, when frozen)
    meta: dict[str, Any] = field(default_factory=dict)

    ir: ClassVar[str] = "seeded"
    functions: ClassVar[tuple] = ()   # no program model: known-bug rules match no op here

    def ops(self) -> list[str]:
        """What the campaign's op coverage counts: none (the module is text)."""
        return []

    @property
    def text(self) -> str:
        """The module judged: the frozen mutant, else the seed (mutated in the sandbox)."""
        return self.mutant if self.mutant is not None else self.seed_text

    def to_json(self) -> dict:
        d = {"kind": "seeded", "schema": SCHEMA_VERSION, "seed_name": self.seed_name,
             "seed_text": self.seed_text, "steps": self.steps, "meta": self.meta}
        if self.mutant is not None:
            d["mutant"] = self.mutant
        return d

    @staticmethod
    def from_json(d: dict) -> "SeededCase":
        if d.get("kind") != "seeded" or d.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"not a seeded case of schema {SCHEMA_VERSION}")
        if not isinstance(d.get("seed_text"), str) or not isinstance(d.get("steps", 0), int) \
                or not isinstance(d.get("mutant", ""), str):
            raise ValueError("a seeded case's seed_text and mutant are text, steps a number")
        return SeededCase(d["seed_text"], str(d.get("seed_name", "")), int(d.get("steps", 2)),
                          d.get("mutant"), dict(d.get("meta", {})))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=True)

    @staticmethod
    def loads(s: str) -> "SeededCase":
        return SeededCase.from_json(json.loads(s))

    def copy(self) -> "SeededCase":
        return SeededCase.loads(self.dumps())
