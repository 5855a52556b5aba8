"""The TIR generator (fuzz.tir): model, renderer, numpy reference, and real TVM builds."""
import json
import time

import numpy as np
import pytest

from fuzz import compat
from fuzz.tir import TIR_GENERATOR_VERSION
from fuzz.tir import build as B
from fuzz.tir import reference as R
from fuzz.tir.generate import generate_tir
from fuzz.tir.model import (Alloc, Block, BufDecl, For, IterVar, Let, Store, TirProgram, binop,
                            const, load, var)
from fuzz.tir.render import TirRenderError, to_tvmscript

SEEDS = range(30)


def _simple(name="A", dtype="float32", how="param", **kw) -> TirProgram:
    """B[i] = A[i] * 2 over 16 elements, with A's declaration varied by ``kw``."""
    a = BufDecl(name, [16], dtype, how=how, **kw)
    b = BufDecl("B", [16], dtype)
    body = [For("i", 16, "serial",
                [Store("B", [var("i")], binop("*", load(name, [var("i")]), const(dtype, 2.0)))])]
    return TirProgram("main", [a, b], body, {"outputs": ["B"]})


# --- the model --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["valid", "near_valid"])
def test_json_round_trip_is_exact(mode):
    for seed in range(40):
        p = generate_tir(seed, mode)
        text = p.dumps()
        d = json.loads(text)
        assert d["kind"] == "tir" and d["schema"] == 1
        q = TirProgram.loads(text)
        assert q.dumps() == text
        assert q.digest() == p.digest()
        assert to_tvmscript(q, True) == to_tvmscript(p, True)


def test_unknown_kind_or_schema_is_rejected():
    d = generate_tir(1).to_json()
    with pytest.raises(ValueError):
        TirProgram.from_json({**d, "schema": 2})
    with pytest.raises(ValueError):
        TirProgram.from_json({**d, "kind": "relax"})


def test_generation_is_deterministic_per_seed_and_fast():
    a = [generate_tir(s).dumps() for s in range(20)]
    assert a == [generate_tir(s).dumps() for s in range(20)]
    assert len(set(a)) == 20
    assert {json.loads(t)["meta"]["generator"] for t in a} == {TIR_GENERATOR_VERSION}
    assert generate_tir(3).digest() != generate_tir(4).digest()
    t0 = time.perf_counter()
    for s in range(200):
        generate_tir(s)
    assert (time.perf_counter() - t0) / 200 < 0.005


def test_generated_programs_keep_their_size_limits():
    for s in range(100):
        p = generate_tir(s)
        assert 1 <= len(p.params) <= 4
        assert all(b.numel <= 512 for b in p.params + p.allocs())
        assert p.meta["outputs"] and set(p.meta["outputs"]) <= {b.name for b in p.params}
        assert "invalid" not in p.meta


# --- the renderer refuses anything it cannot spell safely ---------------------------------------
HOSTILE = "__import__('os').system('x')"


def test_render_rejects_a_hostile_buffer_name_before_parsing():
    p = _simple(name=HOSTILE)
    with pytest.raises(TirRenderError, match="invalid name"):
        to_tvmscript(p)
    # materialize goes through the same check: TVM's parser never sees the text (it would
    # raise a DiagnosticError, not TirRenderError).
    with pytest.raises(TirRenderError):
        B.materialize_tir(p)


@pytest.mark.parametrize("breakage", [
    lambda p: setattr(p, "name", "main(); import os"),
    lambda p: setattr(p.params[0], "dtype", 'float32", __import__("os")'),
    lambda p: setattr(p.params[0], "scope", "global') or print('x"),
    lambda p: setattr(p.params[0], "shape", ["16"]),
    lambda p: setattr(p.params[0], "shape", [True]),
    lambda p: setattr(p.body[0], "kind", "serial(16)) or print(1); (T.serial"),
    lambda p: setattr(p.body[0], "var", "for"),
    lambda p: setattr(p.body[0], "var", "T"),
    lambda p: setattr(p.body[0].body[0], "value", const("float32", float("nan"))),
    lambda p: setattr(p.body[0].body[0], "value", const("float32", "1.0")),
    lambda p: setattr(p.body[0].body[0], "value", ["call", "system", const("float32", 1.0)]),
    lambda p: setattr(p.body[0].body[0], "value", ["bin", "**", var("i"), var("i")]),
    lambda p: setattr(p.body[0].body[0], "value", ["cast", "float32", "os.system('x')"]),
])
def test_render_rejects_unsafe_fields(breakage):
    p = _simple()
    to_tvmscript(p)
    breakage(p)
    with pytest.raises(TirRenderError):
        to_tvmscript(p)


def test_render_rejects_names_that_clash_with_generated_ones():
    p = _simple(how="match_buffer")
    p.params[1].name = "A_handle"
    with pytest.raises(TirRenderError):
        to_tvmscript(p)


def test_axis_separators_render_only_where_supported():
    # The hand-made near-valid case: a 1-D buffer cannot have a separator at 1.
    p = _simple(how="match_buffer", axis_separators=[1])
    p.meta["invalid"] = "A: 1-D buffer with axis_separators=[1]"
    with pytest.raises(TirRenderError, match="axis_separators"):
        to_tvmscript(p, axis_separators_ok=False)
    text = to_tvmscript(p, axis_separators_ok=True)
    assert "axis_separators=[1]" in text and "T.match_buffer(A_handle" in text
    if not compat.has_axis_separators():       # 0.26 and 0.27
        with pytest.raises(TirRenderError):
            B.materialize_tir(p)


def test_axis_separators_feature_valid_and_near_valid():
    seps = invalid = 0
    for s in range(200):
        p = generate_tir(s, features={"axis_separators": True})
        for b in p.params + p.allocs():
            if b.axis_separators is not None:
                seps += 1
                nd = len(b.shape)
                assert b.axis_separators == sorted(b.axis_separators)
                assert all(1 <= a <= nd - 1 for a in b.axis_separators)
        q = generate_tir(s, "near_valid", features={"axis_separators": True})
        assert q.meta["invalid"] and "\n" not in q.meta["invalid"]
        invalid += "axis_separator" in q.meta["invalid"]
        assert all(b.axis_separators is None for b in generate_tir(s).params)
    assert seps > 20 and invalid > 20


# --- the reference on hand-made programs with known answers -------------------------------------
def test_reference_reduction_views_and_casts():
    # P (flat, 20) viewed as V (3, 4) with strides (6, 1) at offset 2; B[i] = sum_k V[i, k]
    # (a block reduction); C[j] = int8(P[j] * 2.5) truncates toward zero.
    P = BufDecl("P", [20], "float32")
    Bo = BufDecl("B", [3], "float32")
    C = BufDecl("C", [4], "int8")
    V = BufDecl("V", [3, 4], "float32", how="view", strides=[6, 1], elem_offset=2, base="P")
    red = For("i", 3, "parallel", [For("k", 4, "serial", [Block(
        "r", [IterVar("vi", "S", 3, var("i")), IterVar("vk", "R", 4, var("k"))],
        [Store("B", [var("vi")], const("float32", 0.0))],
        [Store("B", [var("vi")], binop("+", load("B", [var("vi")]),
                                       load("V", [var("vi"), var("vk")])))])])])
    cst = For("j", 4, "vectorized", [Let("x", "float32", binop(
        "*", load("P", [var("j")]), const("float32", 2.5)),
        [Store("C", [var("j")], ["cast", "int8", var("x")])])])
    prog = TirProgram("main", [P, Bo, C], [Alloc(V, "decl_buffer"), red, cst], {})
    p = np.arange(20, dtype="float32") - 10.0
    inputs = {"P": p, "B": np.zeros(3, "float32"), "C": np.zeros(4, "int8")}
    got = R.run(prog, inputs)
    v = np.lib.stride_tricks.as_strided(p[2:], (3, 4), (24, 4))
    np.testing.assert_array_equal(got["B"], v.sum(1))
    np.testing.assert_array_equal(got["C"], np.trunc(p[:4] * 2.5).astype("int8"))
    np.testing.assert_array_equal(got["P"], p)
    tvm_got = B.build_and_run(prog, inputs=inputs)
    assert B.compare(prog, tvm_got, got) is None
    assert B.verify(B.materialize_tir(prog))[0]


def test_reference_refuses_uninitialised_reads_and_out_of_bounds():
    t = BufDecl("t", [4], "float32", how="alloc")
    prog = TirProgram("main", [BufDecl("B", [4], "float32")], [
        Alloc(t), For("i", 4, "serial", [Store("B", [var("i")], load("t", [var("i")]))])], {})
    with pytest.raises(R.ReferenceError, match="uninitialised"):
        R.run(prog, {"B": np.zeros(4, "float32")})
    prog = _simple()
    prog.body[0].extent = 17
    with pytest.raises(R.ReferenceError, match="out of"):
        R.run(prog, R.make_inputs(prog))


def test_compare_reports_the_first_mismatch():
    p = _simple()
    want = {"A": np.zeros(16, "float32"), "B": np.ones(16, "float32")}
    assert B.compare(p, dict(want), want) is None
    got = {"A": want["A"], "B": want["B"].copy()}
    got["B"][5] = 1.5
    msg = B.compare(p, got, want)
    assert msg.startswith("B[5]: got") and "1 of 16" in msg and "\n" not in msg


def test_inputs_respect_the_recorded_ranges():
    for s in range(20):
        p = generate_tir(s)
        ins = R.make_inputs(p, s)
        for b in p.params:
            a = ins[b.name]
            r = p.meta["inputs"][b.name]
            assert a.shape == tuple(b.shape) and a.flags.c_contiguous
            assert a.dtype == np.dtype(b.dtype)
            assert r["lo"] <= a.min() and a.max() <= r["hi"]
            if b.dtype.startswith("float"):
                assert np.all(a * 8 == np.round(a * 8))


# --- valid programs through real TVM ------------------------------------------------------------
def _judge(seed):
    p = generate_tir(seed)
    try:
        mod = B.materialize_tir(p)
        ok, msg = B.verify(mod)
        assert ok, msg
        inputs = R.make_inputs(p, seed)
        got = B.build_and_run(p, inputs=inputs, lib=B.build(p, mod=mod))
    except Exception as e:  # noqa: BLE001 - a TVM error is allowed only if it is a known bug
        err = B.first_line(e)
        return p, err, B.known_bug(p, err)
    want = R.run(p, inputs)
    bad = B.compare(p, got, want)
    return p, bad, (B.known_bug(p) if bad else None)


def test_valid_programs_build_and_agree_with_the_reference():
    failures, known = [], []
    for seed in SEEDS:
        p, bad, bug = _judge(seed)
        if bad and bug:
            known.append((seed, bug))
        elif bad:
            failures.append(f"seed {seed}: {bad}\n{to_tvmscript(p, True)}")
    assert not failures, "\n".join(failures[:3])
    assert len(known) <= 3, known


def test_verify_names_the_check_it_ran():
    ok, msg = B.verify(B.materialize_tir(generate_tir(0)))
    assert ok and "verify_well_formed" in msg


def test_copy_is_deep():
    from fuzz.tir.generate import generate_tir

    p = generate_tir(5)
    p.meta["schedule"] = {"applied": [{"prim": "split"}]}
    q = p.copy()
    q.meta["schedule"]["applied"].clear()
    assert p.meta["schedule"]["applied"] == [{"prim": "split"}]


@pytest.mark.parametrize("dtype,const,says", [
    ("int8", ("uint8", 255), "exceeds range of int8"),
    ("uint8", ("float32", -0.125), "cannot make uint from negative value"),
])
def test_a_cast_folding_out_of_range_is_the_known_bug_whatever_the_type(dtype, const, says):
    """T.Cast("int8", T.uint8(255)) aborts the build as the bool cast does ("Literal value 255
    exceeds range of int8"), and T.Cast("uint8", T.float32(-0.125)) with 'cannot make uint
    from negative value': one known defect of constant folding. A message about another
    type is not explained by it."""
    from fuzz.tir import model as M

    a = M.BufDecl("A", [3], dtype)
    store = M.Store("A", [M.var("i")], ["cast", dtype, M.const(*const)])
    prog = M.TirProgram("main", [a], [M.For("i", 3, "serial", [store])],
                        {"seed": 0, "mode": "valid"})
    with pytest.raises(Exception) as e:
        B.build(prog, mod=B.materialize_tir(prog))
    err = B.first_line(e.value)
    assert says in err
    assert "out-of-range IntImm" in B.known_bug(prog, err)
    assert B.known_bug(prog, "Literal value 300 exceeds range of int16") is None
