"""Large TVMScript modules: the reducer's dependency-aware split (reducer/split.py), from one
parse per round in the sandbox, reaches the failing binding in a few oracle calls."""
import ast

import pytest

from bench.reduce_scale import chain_module
from reducer.api import reduce_script
from reducer.size import script_bindings

ARGMAX = "Cannot reduce a N dim Tensor [pass LegalizeOps]"
# Measured on chain_module(200) (argmax at binding 90, a message that names no op or
# variable): the split path 12 oracle calls, the delta passes alone 17 (and 24 pass jobs,
# each parsing the module again, against 3 split jobs and 4 pass jobs).
SPLIT_CALLS = 14


def _main(text: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef))


def _minimal(red) -> None:
    assert ARGMAX in red.signature
    assert script_bindings(red.reduced) == 1 and "R.argmax(" in red.reduced
    assert len(_main(red.reduced).args.args) == 1
    assert red.outcome.reproduction["reproduced"] == 3


def test_windows_of_a_module_cut_dependencies_into_parameters():
    from reducer.jobs import ir_split

    r = ir_split({"text": chain_module(12, 5), "levels": 2})
    assert r["bindings"] == 13   # 12 adds, the failing argmax and its astype count two
    wins = {(s["lo"], s["hi"]): s for s in r["slices"] if s["how"] == "window"}
    assert set(wins) == {(0, 7), (7, 13), (0, 4), (4, 7), (7, 10), (10, 13)}
    second = _main(wins[(7, 13)]["text"])
    # Its first binding is v6 = add(v5, v4): v4 and v5, made before the window, become its
    # parameters, in binding order.
    assert [a.arg for a in second.args.args] == ["v4", "v5"]
    assert all(s["text"] and s["size"] == s["hi"] - s["lo"] for s in wins.values())


def test_a_named_binding_is_tried_alone_first():
    from reducer.jobs import ir_split

    r = ir_split({"text": chain_module(40, 20), "hints": ["argmax"], "levels": 1})
    first = r["slices"][0]
    assert first["how"] == "binding" and first["size"] == 1
    assert script_bindings(first["text"]) == 1 and "R.argmax(" in first["text"]
    assert r["slices"][1]["how"] == "cone" and r["slices"][1]["size"] == 21


def test_the_split_reaches_the_failing_binding_of_200_in_few_calls(tmp_path):
    red = reduce_script(chain_module(200), out_dir=tmp_path)
    _minimal(red)
    assert red.stats["split_accepted"] >= 3
    assert red.stats["oracle_calls"] <= SPLIT_CALLS, red.stats


@pytest.mark.slow
def test_the_passes_alone_take_more_calls_on_the_same_module(tmp_path):
    red = reduce_script(chain_module(200), out_dir=tmp_path, split=False)
    _minimal(red)
    assert red.stats["oracle_calls"] > SPLIT_CALLS, red.stats
    assert red.stats["count_jobs"] + red.stats["apply_jobs"] > 10


TUPLE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.add(x, x)
            t = R.split(a, 2)
            b = t[0]
            c = R.add(b, b)
            R.output(c)
        return c
'''


def test_a_cut_never_falls_on_a_value_no_parameter_can_stand_for():
    from reducer.jobs import _parse, _print
    from reducer.passes.ir.windows import Slicer

    s = Slicer(_parse(TUPLE))
    assert s.closure([2, 3]) == [1, 2, 3]          # b = t[0] brings the tuple t along
    text = _print(s.module([2, 3]))
    assert [a.arg for a in _main(text).args.args] == ["a"]
    assert script_bindings(text) == 3 and "R.split(" in text
