"""Every TVMScript file `tvmfuzz gen` saves parses back to the module it was printed from."""
from fuzz.catalogue.known_bugs import match
from tvmfuzz.cli import main
from fuzz.generate import generate
from fuzz.materialize import materialize
from worker.execute import roundtrip_problem


def _known(prog, detail):
    dtypes = {p.runtime_ty.dtype for p in prog.main.params}
    return any(match(op, dtypes, detail, "roundtrip") for op in prog.ops())


def test_saved_scripts_parse_back_structurally_equal(tmp_path):
    import tvm

    from fuzz.materialize import from_script

    assert main(["gen", "--count", "40", "--seed", "500", "--out", str(tmp_path)]) == 0
    checked = 0
    for s in range(500, 540):
        prog = generate(s)
        text = (tmp_path / f"case_{s:06d}.py").read_text()
        mod = materialize(prog)
        problem = roundtrip_problem(mod)
        if problem and _known(prog, problem[1]):
            continue
        assert problem is None, f"seed {s}: {problem}"
        tvm.ir.assert_structural_equal(from_script(text), mod, map_free_vars=True)
        checked += 1
    assert checked >= 30


def test_roundtrip_oracle_reports_a_changed_or_unparsable_module(monkeypatch):
    import fuzz.materialize as M
    import worker.execute as X   # the printer the oracle calls (also repro.py's)

    mod = materialize(generate(1))
    other = M.to_script(materialize(generate(2)))
    monkeypatch.setattr(X, "to_script", lambda m: other)      # the printer "changes" the module
    problem = roundtrip_problem(mod)
    assert problem is not None and "round trip changes the module" in problem[1]
    monkeypatch.setattr(X, "to_script", lambda m: "this is not tvmscript(")
    problem = roundtrip_problem(mod)
    assert problem is not None and "does not parse" in problem[1]
