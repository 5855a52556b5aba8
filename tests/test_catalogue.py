"""Property tests of the op catalogue against the real TVM: for random one-op programs, the
spec's shape rule equals the type TVM infers, and its numpy reference equals TVM's result."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fuzz import dims as D
from fuzz.catalogue import CATALOGUE
from fuzz.catalogue.known_bugs import match
from fuzz.inputs import make_inputs
from fuzz.materialize import materialize, struct_info_of
from worker.selfcheck import _same_ty, check_op
from fuzz.strategies import one_op_programs

OPS = sorted(CATALOGUE)


def test_catalogue_breadth():
    assert len(CATALOGUE) >= 100
    families = {s.family for s in CATALOGUE.values()}
    assert {"elementwise", "reduce", "manipulate", "nn", "linalg"} <= families


@pytest.mark.parametrize("op", OPS)
@settings(max_examples=10)
@given(data=st.data())
def test_shape_rule_matches_tvm_inference(op, data):
    prog = data.draw(one_op_programs(op))
    if prog is None:
        return
    mod = materialize(prog)
    env, _ = make_inputs(prog, 0)
    inferred = struct_info_of(mod)
    for n in prog.main.nodes():
        t = inferred.get(n.name)
        if t is not None and _same_ty(n.ty, t, env):
            continue
        detail = f"{n.name}: rule {n.ty}, TVM {t}"
        if match(op, _dtypes(prog), detail, "shape-rule", n.attrs):
            continue   # a known TVM inference bug (fuzz/catalogue/known_bugs.py)
        raise AssertionError(f"{n.op}{n.attrs}: {detail}\n{mod.script()}")


def _dtypes(prog):
    return {q.runtime_ty.dtype for q in prog.main.params}


@pytest.fixture(scope="module")
def runner():
    from worker.sandbox_runner import SandboxRunner

    r = SandboxRunner(timeout=120)
    yield r
    r.close()


def _unexplained(op, seeds, runner):
    out = []
    for p in check_op(op, seeds, runner=runner):
        if p.program is not None:
            attrs = next((n.attrs for n in p.program.main.nodes() if n.op == op), {})
            if match(op, _dtypes(p.program), p.detail, p.what, attrs):
                continue
        out.append(f"seed {p.seed} {p.what}: {p.detail}")
    return out


@pytest.mark.parametrize("op", OPS)
def test_reference_matches_tvm(op, runner):
    problems = _unexplained(op, range(2), runner)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_reference_matches_tvm_many_seeds(op, runner):
    problems = _unexplained(op, range(2, 14), runner)
    assert not problems, "\n".join(problems)
