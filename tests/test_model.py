import json

import pytest
from hypothesis import given

from fuzz import GENERATOR_VERSION
from fuzz.generate import generate
from fuzz.model import Program
from fuzz.strategies import programs


@pytest.mark.parametrize("mode", ["valid", "near-valid"])
def test_json_round_trip_is_exact(mode):
    for seed in range(40):
        p = generate(seed, mode=mode)
        text = p.dumps()
        assert Program.loads(text).dumps() == text
        json.loads(text)  # plain JSON, no custom objects


def test_generation_is_deterministic_per_seed_and_version():
    a = [generate(s).dumps() for s in range(20)]
    b = [generate(s).dumps() for s in range(20)]
    assert a == b
    assert len(set(a)) == 20
    assert all(json.loads(t)["meta"]["generator"] == GENERATOR_VERSION for t in a)


def test_unknown_schema_is_rejected():
    d = generate(1).to_json()
    d["schema"] = 999
    with pytest.raises(ValueError, match="schema"):
        Program.from_json(d)


@given(programs())
def test_strategy_programs_round_trip(p):
    assert Program.loads(p.dumps()).dumps() == p.dumps()
    names = [n.name for f in p.functions for n in f.nodes()]
    for f in p.functions:
        defined = {q.name for q in f.params}
        for n in f.nodes():
            assert set(n.args) <= defined, f"{n.name} uses an undefined value"
            defined.add(n.name)
        assert f.ret in defined
