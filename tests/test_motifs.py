"""Generator motifs that reach two TVM bug classes (bench/bug_classes.py):

* fuzz.motifs: an op repeated with fresh constant weights, and fusion patterns drawn from
  the case program's ops (worker.campaign.pattern_ops): pattern fusion merging groups that
  differ only in bound constants (apache/tvm #19801, wrong on 0.25.0);
* fuzz.dynshape: match_cast views of a value's own static type: static memory planning
  reusing storage a match_cast view aliases (apache/tvm #20220, wrong on 0.25.0 and 0.26.0;
  the memory-planning oracle finds it at build time).

The cases named here (seeds 1425 and 534 of generator v3, stored as case JSON in tests/data so
that a generator version bump leaves them as they were) are the first hits of each class
measured by bench/bug_classes.py on 0.25.0; on the default release (0.27.0.post1) both agree
with numpy.
"""
import collections
import json
from pathlib import Path

import pytest

from fuzz.generate import generate
from fuzz.model import Program
from fuzz.retype import retype
from worker.campaign import make_case, pattern_ops

DATA = Path(__file__).parent / "data"


def case_19801():
    """Generator v3's campaign case of seed 1425 (worker.campaign.make_case(1425, None))."""
    return Program.loads((DATA / "relax_19801_matmul_const_copies_v3_seed1425.json").read_text())


def case_20220():
    """Generator v3's campaign case of seed 534 (worker.campaign.make_case(534, None))."""
    return Program.loads((DATA / "relax_20220_match_cast_view_v3_seed534.json").read_text())


def _const_layers(prog):
    """Groups of catalogue nodes with the same op, attributes and operand types that take
    ``const`` operands: the copies ``gen_repeat`` made."""
    groups = collections.defaultdict(list)
    for f in prog.functions:
        nodes = list(f.nodes())
        consts = {n.name: n for n in nodes if n.op == "const" and n.ty.shape}
        tys = {n.name: n.ty.to_json() for n in nodes}
        tys.update({p.name: p.ty.to_json() for p in f.params})
        for n in nodes:
            weights = [consts[a].attrs["value"] for a in n.args if a in consts]
            if weights and n.op.startswith("relax."):
                key = (n.op, json.dumps(n.attrs, sort_keys=True),
                       json.dumps([tys.get(a) for a in n.args], sort_keys=True))
                groups[key].append(tuple(weights))
    return [g for g in groups.values() if len(g) >= 2]


def _views(prog):
    return [n for f in prog.functions for n in f.nodes()
            if n.op == "match_cast" and n.attrs.get("known") == {}]


def test_generator_repeats_a_layer_with_fresh_constants():
    progs = [generate(s) for s in range(300)]
    hits = [p for p in progs if _const_layers(p)]
    # measured: 163 of seeds 0..1499 hold the motif (REPEAT_SHARE 0.05 a step)
    assert 15 <= len(hits) <= 90, len(hits)
    for p in hits[:25]:
        retype(p.copy(), strict=True)
        for group in _const_layers(p):
            assert len(set(group)) == len(group), group   # each copy its own constants
    s = hits[0].meta["seed"]
    assert generate(s).to_json() == hits[0].to_json()     # deterministic per seed
    assert all(_const_layers(generate(s, ops=("relax.add", "relax.matmul"))) == []
               for s in range(60))   # not in programs drawn from a subset (ONNX, PyTorch)


def test_fusion_patterns_are_drawn_from_the_program():
    p = case_19801()
    (group,) = _const_layers(p)
    assert [n.op for n in p.main.nodes() if n.op == "relax.matmul"].count("relax.matmul") == 4
    assert sorted(group) == [(-3,), (-1,), (2,)]
    assert "relax.matmul@c" in pattern_ops(p)
    passes = p.meta["variants"][1]["passes"]
    assert "FuseOpsByPattern:relax.matmul@c;relax.matmul@c" in passes, passes


def test_bug_class_cases_agree_with_numpy_on_the_default_release():
    """The classes' first hits (fixed in 0.27) and the first motif cases of valid mode: built
    with their variants, run and compared with numpy, never ``invalid``."""
    from worker.sandbox_runner import SandboxRunner

    progs = [case_19801(), case_20220()]
    views = [generate(s) for s in range(400) if _views(generate(s))][:3]
    assert views, "no match_cast view in seeds 0..399"
    layers = [p for p in (make_case(s, "valid") for s in range(200)) if _const_layers(p)][:10]
    assert len(layers) == 10
    for p in views:
        p.meta["variants"] = None
    runner = SandboxRunner(timeout=120)
    try:
        outs = runner.run_many(progs + views + layers)
    finally:
        runner.close()
    assert [o.verdict for o in outs[:2]] == ["pass", "pass"], [o.signature for o in outs[:2]]
    verdicts = collections.Counter(o.verdict for o in outs[2:])
    assert not verdicts["invalid"], [o.signature for o in outs if o.verdict == "invalid"]
    assert verdicts["pass"] >= 6, (verdicts, [o.signature for o in outs if o.verdict != "pass"])


@pytest.mark.release
def test_bug_classes_are_wrong_on_the_releases_that_have_them(monkeypatch, release_home):
    """#19801 (seed 1425) on 0.25.0 only; #20220 (seed 534) on 0.25.0 and 0.26.0."""
    from worker.releases import resolve
    from worker.sandbox_runner import SandboxRunner

    monkeypatch.setenv("TVMFUZZ_HOME", str(release_home))
    want = {"0.25.0": ("fail", "fail"), "0.26.0": ("pass", "fail")}
    for version, (a, b) in want.items():
        runner = SandboxRunner(python=resolve(version), timeout=120)
        try:
            outs = runner.run_many([case_19801(), case_20220()])
        finally:
            runner.close()
        assert (outs[0].verdict, outs[1].verdict) == (a, b), (version, outs)
        if a == "fail":
            assert outs[0].signature == "numeric | compare | relax.matmul:int32"
        # found at build time: the planner put a tensor over the value the view still reads
        # (worker.execute.planned_overlaps), before the run would show it as a wrong result
        assert (outs[1].kind, outs[1].extra["view"]) == ("memory_plan_overlap", "match_cast")
