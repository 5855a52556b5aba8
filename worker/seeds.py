"""Seeds for ``tvmfuzz run --seeds DIR``: real modules that campaigns mutate.

A seed directory holds TVMScript files (``*.py``) and cases (``*.json``: program models such as
a reduced ``case.json`` or ``tvmfuzz gen`` output; a seeded case's JSON gives its module's
text). Each file goes through the one loader of input from outside (``worker.user_input``:
the script guard for text, ``case_problem`` for JSON) in the parent, without TVM: a file it
refuses is skipped with a one-line note, never fatal. ``--seeds default`` is the set shipped
with tvmfuzz (``fuzz/seeds/``, package data).

The case of a seed number is deterministic: which seed (by the case seed), how it is mutated
(program models: ``fuzz.grow`` here, in the parent; TVMScript: a ``fuzz.seeded.SeededCase``
mutated in the sandbox child by ``worker.seed_mutate``) and its variants (the default pipeline
and a random ``relax.transform`` pass sequence, so the comparison across variants is the
differential oracle of the module with and without the passes).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import fuzz
from fuzz.choice import RandomChooser

from .variants import BASE, Variant, random_passes

DEFAULT_DIR = Path(fuzz.__file__).resolve().parent / "seeds"   # package data
SEEDED_SHARE = 0.5   # of cases, when a campaign also generates cases (--ir relax,tir,seeded)


class SeedError(ValueError):
    """No seeds can be used; the message is one line."""


@dataclass
class Seed:
    name: str
    kind: str      # "script" (TVMScript text) or "case" (a Relax program model)
    value: Any


def seed_dir(spec: str) -> Path:
    return DEFAULT_DIR if spec == "default" else Path(spec)


def load_seeds(spec: str, note: Callable[[str], None] = print) -> list[Seed]:
    """The usable seeds of a directory (``default``: the shipped set), sorted by name; a file
    that cannot be used is skipped with a one-line note. Raises SeedError when the directory
    is missing or nothing in it is usable."""
    from fuzz.grow import Skip, problems

    from .user_input import InputError, read_input

    d = seed_dir(spec)
    if not d.is_dir():
        raise SeedError(f"--seeds: {spec} is not a directory")
    out = []
    for path in sorted(p for p in d.iterdir() if p.suffix in (".py", ".json") and p.is_file()):
        try:
            kind, value = read_input(path)
        except InputError as e:
            note(f"seed {path.name} skipped: {e}")
            continue
        if kind == "case" and value.ir == "seeded":   # a seeded case: its module's text
            kind, value = "script", value.text
        elif kind == "case" and value.ir != "relax":
            note(f"seed {path.name} skipped: only Relax program models are grown "
                 f"(this is a {value.ir} case)")
            continue
        elif kind == "case" and (value.meta.get("mode") == "near-valid"
                                 or value.meta.get("mutations")):
            note(f"seed {path.name} skipped: a near-valid mutant (ill-formed on purpose) "
                 "does not grow into valid programs")
            continue
        elif kind == "case":
            try:
                problems(value.copy())
            except Skip as e:
                note(f"seed {path.name} skipped: not a valid program model ({e})")
                continue
        out.append(Seed(path.name, kind, value))
    if not out:
        raise SeedError(f"--seeds: no usable seed in {d} (TVMScript *.py or case *.json)")
    return out


def seeded_variants(seed: int) -> list[dict]:
    """The default pipeline and a random pass sequence (then the default build)."""
    ch = RandomChooser(seed * 6151 + 3)
    target = {"kind": "llvm", "opt-level": ch.integer(0, 3)}
    passes = random_passes(ch, ch.integer(1, 6))
    return [BASE.to_json(), Variant(target, "passes", passes).to_json()]


def takes(seed: int, ir: tuple) -> bool:
    """Is case ``seed`` a seeded one? Every case with ``--ir seeded``; with other IRs too,
    SEEDED_SHARE of them."""
    if "seeded" not in ir:
        return False
    return len(ir) == 1 or random.Random(seed * 131 + 5).random() < SEEDED_SHARE


def seeded_case(seed: int, seeds: list[Seed]):
    """The case of ``seed``: a seed chosen by the case seed, mutated as its kind is."""
    from fuzz.grow import grow
    from fuzz.seeded import SeededCase

    rng = random.Random(seed * 7907 + 41)
    s = seeds[rng.randrange(len(seeds))]
    if s.kind == "case":
        prog = grow(s.value, seed)
        prog.meta["seed_name"] = s.name
        prog.meta["variants"] = seeded_variants(seed)
        return prog
    return SeededCase(s.value, s.name, rng.randint(1, 3),
                      meta={"seed": seed, "variants": seeded_variants(seed)})


def freeze_mutant(prog, outcome, script=None) -> None:
    """Freeze a seeded finding to the module that failed (the outcome's mutant text, else the
    printed one), so replays, reductions and other releases judge exactly it."""
    if getattr(prog, "ir", "") != "seeded" or prog.mutant is not None:
        return
    text = outcome.extra.get("mutant")
    if text is None and type(script) is str:   # a ScriptFailure is no text
        text = script
    if text is not None:
        prog.mutant = text
        prog.meta["seed_mutations"] = list(outcome.extra.get("seed_mutations") or [])
