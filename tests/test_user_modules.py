"""Modules tvmfuzz did not write, taken as a new user gives them: no ``main``, several public
functions, shape/prim/tuple/object parameters, calls to packed functions this TVM lacks. Each
gets a verdict; tvmfuzz's own limits are ``invalid`` with a kind, never a finding."""
import json
import subprocess
import sys

import pytest

from worker import cases
from worker.script_guard import comment_imports

HEADER = "from tvm.script import ir as I, relax as R, tir as T\n\n"

NO_MAIN = HEADER + '''@I.ir_module
class Module:
    @R.function
    def foo(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, x)
        return y
'''

TWO = HEADER + '''@I.ir_module
class Module:
    @R.function
    def foo(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        y = R.add(x, x)
        return y

    @R.function
    def bar(x: R.Tensor((4,), "int32")) -> R.Tensor((4,), "int32"):
        y = R.multiply(x, x)
        return y

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "int32")) -> R.Tensor((4,), "int32"):
        return x
'''

# Shape, prim and tuple parameters; the tensor's dims are the shape parameter's variables, so
# its input must agree with the shape's (the VM checks it).
SHAPES = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(s: R.Shape(["n", "m"]), x: R.Tensor(("n", "m"), "float32"), p: R.Prim("int64"),
             t: R.Tuple(R.Tensor((2,), "float32"), R.Shape([3])), f: R.Prim("float32")):
        n = T.int64()
        m = T.int64()
        y = R.add(x, x)
        return (y, s, t)
'''

# Shape and tensor known only by ndim, given their dims by match_cast: one binding of n, m.
CAST = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(s: R.Shape(ndim=2), x: R.Tensor(ndim=2, dtype="float32")):
        n = T.int64()
        m = T.int64()
        s2 = R.match_cast(s, R.Shape([n, m]))
        x2 = R.match_cast(x, R.Tensor((n, m), "float32"))
        y = R.add(x2, x2)
        return y
'''

OBJECT = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(o: R.Object, x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        return x
'''

EXTERN = HEADER + '''@I.ir_module
class Module:
    @R.function(pure=False)
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.call_packed("tvmfuzz_test.no_such_func", x, ty_args=R.Tensor((2,), "float32"))
        return y
'''

EXTERN_DPS = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.call_dps_packed("tvmfuzz_test.no_dps", (x,), out_ty=R.Tensor((2,), "float32"))
        return y
'''

# A packed function every TVM build registers: judged as any other module.
EXTERN_FOUND = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((2,), "float32"):
        y = R.call_pure_packed("vm.builtin.copy", x, ty_args=R.Tensor((2,), "float32"))
        return y
'''

# Written for another device than the build's: a second CPU, a GPU kernel.
SECOND_DEVICE = HEADER + '''@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice("llvm"), I.vdevice("llvm", 1)]})

    @R.function
    def main(a: R.Tensor((4,), "float32", "llvm:1")) -> R.Tensor((4,), "float32", "llvm:1"):
        s: R.Tensor((4,), "float32", "llvm:1") = R.add(a, a)
        return s
'''

GPU_KERNEL = HEADER + '''@I.ir_module(s_tir=True)
class Module:
    @T.prim_func(s_tir=True)
    def exp(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
        for i in T.thread_binding(8, thread="threadIdx.x"):
            with T.sblock("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = T.exp(A[vi])

    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "float32"):
        cls = Module
        y = R.call_tir(cls.exp, (x,), out_ty=R.Tensor((8,), "float32"))
        return y
'''

# The module's own checks refuse random inputs: an assertion on a dim, a PrimFunc that wants
# a 4x4 buffer where the parameter's type gives only an ndim.
ASSERTS = HEADER + '''@I.ir_module
class Module:
    @R.function(pure=False)
    def main(A: R.Tensor(["N"], "float32")):
        N = T.int64()
        _ = R.assert_op(R.prim_value(N > 100), format="N too small")
        return A
'''

GUESSED = HEADER + '''@I.ir_module
class Module:
    @T.prim_func
    def ident(A: T.Buffer((4, 4), "float32"), B: T.Buffer((4, 4), "float32")):
        for i, j in T.grid(4, 4):
            B[i, j] = A[i, j]

    @R.function
    def main(x: R.Tensor(dtype="float32", ndim=2)) -> R.Tensor((4, 4), "float32"):
        cls = Module
        y = R.call_tir(cls.ident, (x,), out_ty=R.Tensor((4, 4), "float32"))
        return y
'''

# TVM 0.27 cannot lower acosh for float16: a real failure stays a finding.
FAILS = HEADER + '''@I.ir_module
class Module:
    @R.function
    def main(h: R.Tensor((4,), dtype="float16")) -> R.Tensor((4,), dtype="float16"):
        z = R.acosh(h)
        return z
'''


def judge(text, **opts):
    return cases.judge(cases.job(comment_imports(text), **opts))


def test_no_main_runs_the_only_public_function():
    o = judge(NO_MAIN)
    assert o.verdict == "pass", o


def test_several_public_functions_need_entry_and_the_error_lists_them():
    o = judge(TWO)
    assert (o.verdict, o.kind) == ("invalid", "no_entry"), o
    assert "bar, foo" in o.message and "--entry" in o.message
    assert judge(TWO, entry="bar").verdict == "pass"


def test_a_build_failure_is_a_finding_whichever_function_would_run():
    # No main and two public functions: the build fails before any entry is needed.
    o = judge(FAILS.replace("def main(", "def foo(") + '''
    @R.function
    def bar(x: R.Tensor((4,), "int32")) -> R.Tensor((4,), "int32"):
        return x
''')
    assert (o.verdict, o.kind, o.stage) == ("fail", "crash", "build"), o


def test_entry_must_be_a_relax_function_of_the_module():
    assert judge(TWO, entry="helper").verdict == "pass"   # the VM calls private ones too
    o = judge(TWO, entry="nope")
    assert (o.verdict, o.kind) == ("invalid", "no_entry") and "bar, foo" in o.message
    assert "private: helper" in o.message


def test_a_private_main_is_still_the_default():
    o = judge(NO_MAIN.replace("@R.function\n    def foo", "@R.function(private=True)\n    def main"))
    assert o.verdict == "pass", o


def test_entry_reaches_the_inputs_and_the_vm():
    from worker.script_inputs import entry_function, input_values

    import tvm

    mod = tvm.script.from_source(comment_imports(TWO))
    assert entry_function(mod, "bar") == "bar"
    (x,) = input_values(mod[entry_function(mod, "bar")])
    assert x.shape == (4,) and x.dtype == "int32"
    job = cases.job(comment_imports(TWO), entry="foo")
    assert job["entry"] == "foo"
    o = cases.judge(job)
    assert o.verdict == "pass", o


def test_shape_prim_and_tuple_parameters_get_inputs_that_agree():
    from worker.script_inputs import ShapeValue, input_values

    import tvm

    mod = tvm.script.from_source(comment_imports(SHAPES))
    s, x, p, t, f = input_values(mod["main"], seed=3)
    assert isinstance(s, ShapeValue) and x.shape == tuple(s)
    assert isinstance(p, int) and isinstance(f, float)
    assert t[0].shape == (2,) and tuple(t[1]) == (3,)
    o = judge(SHAPES)
    # Built and ran; TVM 0.27 prints an R.Prim parameter as T.int64, which does not parse
    # back: a round-trip finding, the only failure this module may have.
    assert o.verdict == "pass" or (o.verdict, o.stage) == ("fail", "roundtrip"), o


def test_match_cast_gives_shape_and_tensor_one_binding():
    o = judge(CAST)
    assert o.verdict == "pass", o


def test_object_parameter_is_invalid_not_a_finding():
    o = judge(OBJECT)
    assert (o.verdict, o.kind) == ("invalid", "no_inputs"), o
    assert "parameter o" in o.message


@pytest.mark.parametrize("text,name", [(EXTERN, "tvmfuzz_test.no_such_func"),
                                       (EXTERN_DPS, "tvmfuzz_test.no_dps")],
                         ids=["call_packed", "call_dps_packed"])
def test_missing_packed_function_is_needs_external(text, name):
    o = judge(text)
    assert (o.verdict, o.kind) == ("invalid", "needs_external"), o
    assert name in o.message


@pytest.mark.parametrize("text,needle", [(SECOND_DEVICE, "llvm:1"),
                                         (GPU_KERNEL, "threadIdx.x")],
                         ids=["second_cpu", "gpu_kernel"])
def test_a_module_for_another_device_is_needs_device(text, needle):
    o = judge(text)
    assert (o.verdict, o.kind) == ("invalid", "needs_device"), o
    assert needle in o.message


@pytest.mark.parametrize("text", [ASSERTS, GUESSED], ids=["assert_op", "guessed_shape"])
def test_the_module_refusing_random_inputs_is_invalid(text):
    o = judge(text)
    assert (o.verdict, o.kind, o.stage) == ("invalid", "input_rejected", "run"), o


def test_registered_packed_function_is_judged():
    assert judge(EXTERN_FOUND).verdict == "pass"


def test_a_real_failure_still_fails():
    o = judge(FAILS)
    assert (o.verdict, o.kind, o.stage) == ("fail", "crash", "build"), o


def test_results_tvmfuzz_cannot_read_are_invalid():
    from worker.script_judge import TextInputs

    o = TextInputs(None).refused(TypeError("the entry function returns a Foo"), "outputs")
    assert (o.verdict, o.kind) == ("invalid", "unsupported_output")


def test_output_arrays_reads_shapes_prims_and_nests():
    import numpy as np
    import tvm

    from worker.script_inputs import output_arrays

    got = output_arrays((tvm.runtime.ShapeTuple([2, 3]), 4, (np.float32(1.5), None)))
    assert [a.tolist() for a in got] == [[2, 3], 4, 1.5, []]
    assert output_arrays(object())[0].item() == "<object>"   # opaque: compared by kind


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tvmfuzz", *args], capture_output=True,
                          text=True, timeout=300)


def test_replay_entry_flag_and_one_line_error(tmp_path):
    f = tmp_path / "two.py"
    f.write_text(TWO)
    r = _cli("replay", str(f), "--times", "1")
    assert r.returncode == 2 and "bar, foo" in r.stderr and "--entry" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _cli("replay", str(f), "--times", "1", "--entry", "bar", "--format", "json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "pass"


def test_replay_extern_is_invalid_with_no_bug(tmp_path):
    f = tmp_path / "ext.py"
    f.write_text(EXTERN)
    r = _cli("replay", str(f), "--times", "1", "--format", "json")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["verdict"], got["kind"], got["bug_id"]) == ("invalid", "needs_external", "")


def test_report_of_a_chosen_entry_writes_a_repro_that_runs_it(tmp_path, capsys):
    from tvmfuzz.cli import main

    from test_repro_fresh import fresh_run

    f = tmp_path / "two.py"
    f.write_text(FAILS.replace("def main(", "def foo(") + '''
    @R.function
    def bar(x: R.Tensor((4,), "int32")) -> R.Tensor((4,), "int32"):
        return x
''')
    out = tmp_path / "rep"
    rc = main(["report", str(f), "--out", str(out), "--no-bisect", "--entry", "foo"])
    assert rc == 0, capsys.readouterr()
    repro = (out / "repro.py").read_text()
    assert '"entry": "foo"' in repro and "def entry_function(" in repro
    r = fresh_run(out / "repro.py")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]


def test_tvm_script_ir_module_spelling_is_taken(tmp_path):
    from worker.user_input import read_input

    f = tmp_path / "m.py"
    f.write_text("import tvm\nfrom tvm.script import relax as R\n\n"
                 + NO_MAIN.split("\n\n", 1)[1].replace("@I.ir_module", "@tvm.script.ir_module"))
    kind, text = read_input(f)
    assert kind == "script"
    assert cases.judge(cases.job(text)).verdict == "pass"


def test_reduce_through_a_chosen_entry(tmp_path, capsys):
    from tvmfuzz.cli import main

    f = tmp_path / "m.py"
    f.write_text(HEADER + '''@I.ir_module
class Module:
    @R.function
    def foo(h: R.Tensor((4,), "float16"), g: R.Tensor((4,), "float16")) -> R.Tensor((4,), "float16"):
        y = R.add(h, g)
        z = R.acosh(y)
        return z

    @R.function
    def bar(x: R.Tensor((4,), "int32")) -> R.Tensor((4,), "int32"):
        return x
''')
    out = tmp_path / "red"
    rc = main(["reduce", str(f), "--entry", "foo", "--out", str(out), "--time", "60s"])
    text = capsys.readouterr().out
    assert rc == 0 and "reproduces 3/3" in text, text
    assert "def foo(" in (out / "case.py").read_text()
    assert json.loads((out / "reduce.json").read_text())["entry"] == "foo"
    assert '"entry": "foo"' in (out / "repro.py").read_text()
