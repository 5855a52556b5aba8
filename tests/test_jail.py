"""The jail (worker/jail.py): what a hostile input can do once it runs inside it.

Each test runs real code inside the real jail (bubblewrap) and checks, from outside, that the
effect did not happen: a command's mark on the filesystem, a file written outside the scratch
directory, a secret read from the home or the corpus, a connection to a socket on this machine,
a shared library loaded from the user's files, a secret in the environment. Some payloads go
through TVM's own TVMScript parser with the allowlist left out on purpose: the jail alone must
stop them. The allowlist's own refusals are tested in tests/test_script_guard.py.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from worker import jail as J
from worker.sandbox import Sandbox

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def jail_ok():
    why = J.problem()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide the jail: {why}")
        pytest.skip(why)


def jailed(code: str, hide=(), stdin: str = "", env: dict | None = None):
    """Run ``python -c code`` in the jail; (returncode, stdout, stderr)."""
    argv, jenv = J.Jail(hide=tuple(str(h) for h in hide)).wrap(
        [sys.executable, "-c", code], dict(os.environ if env is None else env,
                                           PYTHONPATH=str(ROOT)))
    r = subprocess.run(argv, env=jenv, input=stdin, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


@pytest.fixture
def secret_dir(tmp_path):
    """A directory standing for the corpus: a secret in it, and a marker path beside it."""
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "secret.txt").write_text("corpus-secret")
    return d


def test_identity_is_unprivileged_and_filesystem_read_only(jail_ok):
    rc, out, err = jailed(textwrap.dedent(f"""
        import os
        print(os.getuid(), os.geteuid())
        for path in ({str(ROOT / 'jail-probe')!r}, '/etc/jail-probe', '/usr/jail-probe'):
            try:
                open(path, 'w').write('x')
                print('WROTE', path)
            except OSError as e:
                print('refused', e.errno)
        open('/tmp/scratch', 'w').write('ok')
        print(open('/tmp/scratch').read())
    """))
    assert rc == 0, err
    lines = out.split("\n")
    uid, euid = map(int, lines[0].split())
    assert uid != 0 and euid != 0
    assert "WROTE" not in out
    assert lines[-2] == "ok"                       # the private scratch directory works
    assert not (ROOT / "jail-probe").exists()


def test_command_cannot_leave_a_mark(jail_ok, tmp_path):
    mark = ROOT / "jail-mark"
    rc, out, err = jailed(textwrap.dedent(f"""
        import subprocess
        r = subprocess.run(['sh', '-c', 'touch {mark} {tmp_path}/mark; echo ran'],
                           capture_output=True, text=True)
        print(r.stdout.strip(), r.returncode)
    """))
    assert rc == 0, err
    assert not mark.exists() and not (tmp_path / "mark").exists()


def test_secrets_in_home_corpus_and_environment_are_out_of_reach(jail_ok, secret_dir):
    home_secret = Path.home() / ".tvmfuzz-jail-test-secret"
    home_secret.write_text("home-secret")
    try:
        env = dict(os.environ, TVMFUZZ_BROKER="redis://:hunter2@10.0.0.1:6379/0")
        rc, out, err = jailed(textwrap.dedent(f"""
            import os
            for path in ({str(home_secret)!r}, {str(secret_dir / 'secret.txt')!r},
                         '/etc/shadow'):
                try:
                    print('READ', open(path).read())
                except OSError as e:
                    print('refused', e.errno)
            print('ENV', os.environ.get('TVMFUZZ_BROKER'))
        """), hide=[secret_dir], env=env)
    finally:
        home_secret.unlink()
    assert rc == 0, err
    assert "READ" not in out and "secret" not in out and "hunter2" not in out
    assert "ENV None" in out


def test_no_network_even_to_this_machine(jail_ok):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.5)
    port = srv.getsockname()[1]
    try:
        rc, out, err = jailed(textwrap.dedent(f"""
            import socket
            try:
                socket.create_connection(('127.0.0.1', {port}), timeout=3)
                print('CONNECTED')
            except OSError as e:
                print('refused', e.errno)
            try:
                socket.create_connection(('1.1.1.1', 53), timeout=3)
                print('CONNECTED')
            except OSError as e:
                print('refused', e.errno)
        """))
        with pytest.raises(socket.timeout):
            srv.accept()
    finally:
        srv.close()
    assert rc == 0, err
    assert "CONNECTED" not in out and out.count("refused") == 2


def test_shared_library_from_the_users_files_cannot_load(jail_ok, secret_dir):
    src = secret_dir / "evil.c"
    src.write_text("int evil(void) { return 42; }\n")
    lib = secret_dir / "libevil.so"
    if subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)]).returncode:
        pytest.skip("no C compiler to build the test library")
    import ctypes

    assert ctypes.CDLL(str(lib)).evil() == 42     # it loads outside the jail
    rc, out, err = jailed(textwrap.dedent(f"""
        import ctypes
        try:
            print('LOADED', ctypes.CDLL({str(lib)!r}).evil())
        except OSError as e:
            print('refused', str(e)[:80])
    """), hide=[secret_dir])
    assert rc == 0, err
    assert "LOADED" not in out and "refused" in out


def test_tvmscript_payload_without_the_allowlist_is_contained(jail_ok, tmp_path, secret_dir):
    """The allowlist left out on purpose: TVM's parser evaluates the annotation, the payload
    runs, and the jail keeps its effects (a file outside the scratch directory, a secret read
    out through the module) from happening."""
    mark = ROOT / "jail-tvmscript-mark"
    payload = textwrap.dedent(f"""
        @I.ir_module
        class Module:
            @R.function
            def main(x: R.Tensor((__import__("os").system("touch {mark}") * 0 + len(
                    __import__("pathlib").Path("{secret_dir}/secret.txt").read_text()),),
                    "float32")):
                return x
    """)
    parse = textwrap.dedent("""
        import sys
        import tvm
        try:
            mod = tvm.script.from_source(sys.stdin.read())
            print('PARSED', mod.script())
        except Exception as e:
            print('failed', type(e).__name__)
    """)
    # Outside the jail the payload does what it says (with a harmless mark in tmp_path).
    control = payload.replace(str(mark), str(tmp_path / "mark"))
    r = subprocess.run([sys.executable, "-c", parse], input=control, capture_output=True,
                       text=True, timeout=120)
    assert (tmp_path / "mark").exists() and "13" in r.stdout, r.stdout + r.stderr
    rc, out, err = jailed(parse, hide=[secret_dir], stdin=payload)
    assert rc == 0, err
    assert not mark.exists()
    # The secret's length (13) would have become the shape had the file been readable.
    assert "13" not in out


def test_sandbox_server_runs_cases_in_the_jail(jail_ok, secret_dir):
    from worker.jobs import floor_divide_by_zero

    with Sandbox(timeout=60, jail=J.require(hide=(str(secret_dir),))) as sb:
        assert sb.hello["tvm"]
        ok = sb.run({"kind": "script", "text": _MODULE})
        assert ok["status"] == "ok" and ok["result"]["verdict"] == "pass", ok
        died = sb.run({"kind": "case", "program": floor_divide_by_zero().to_json()})
        assert died["status"] == "signal" and died["signal_name"] == "SIGFPE"


_MODULE = textwrap.dedent("""
    @I.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
            y = R.exp(x)
            return y
""")


def _cli(*args, env=None, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "tvmfuzz", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


def test_replay_is_jailed_by_default_and_fails_closed_without_bwrap(jail_ok, tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from tvm.script import ir as I\nfrom tvm.script import relax as R\n" + _MODULE)
    r = _cli("replay", str(f), "--times", "1")
    assert r.returncode == 0 and "verdict: pass" in r.stdout, r.stderr
    # A host without bwrap: one line, exit 2, before any work; --no-jail is the way out.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("setpriv",):
        if os.path.exists(f"/usr/bin/{tool}"):
            os.symlink(f"/usr/bin/{tool}", bindir / tool)
    env = dict(os.environ, PATH=str(bindir))
    r = _cli("replay", str(f), "--times", "1", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "bwrap" in r.stderr and "--no-jail" in r.stderr
    r = _cli("replay", str(f), "--times", "1", "--no-jail", env=env)
    assert r.returncode == 0 and "verdict: pass" in r.stdout, r.stderr


@pytest.mark.parametrize("name, content, says", [
    ("empty.py", b"", "is empty"),
    ("blank.py", b"\n  \n", "is empty"),
    ("binary.py", b"\x7fELF\x02\x01\x00\x00", "binary data"),
    ("latin1.py", "x = 'caf\xe9'\n".encode("latin-1"), "not UTF-8"),
    ("nomodule.py", b"x = R.Tensor((4,), 'float32')\n", "has no @I.ir_module"),
    ("notpython.py", b"def (:\n", "Python syntax error"),
    ("list.json", b"[1, 2]", "not a tvmfuzz case"),
    ("other.json", b'{"hello": 1}', "not a tvmfuzz case"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, name, content, says):
    f = tmp_path / name
    f.write_bytes(content)
    out = tmp_path / "out"
    before = set(tmp_path.rglob("*"))
    for cmd in (["replay", str(f)], ["reduce", str(f), "--out", str(out)],
                ["report", str(f), "--out", str(out)], ["bisect", str(f)]):
        r = _cli(*cmd, cwd=tmp_path)
        assert r.returncode == 2, (cmd, r.stdout, r.stderr)
        assert r.stderr.startswith("tvmfuzz: error: ") and r.stderr.count("\n") == 1, r.stderr
        assert says in r.stderr, r.stderr
    assert set(tmp_path.rglob("*")) == before


def _case_with_variant(tmp_path, variant: dict) -> Path:
    from fuzz.generate import generate

    prog = generate(3)
    prog.meta["variants"] = [variant]
    f = tmp_path / "case.json"
    f.write_text(prog.dumps())
    return f


@pytest.mark.parametrize("variant, says", [
    ({"target": {"kind": "llvm"}, "pipeline": "passes", "passes": ["os.system"]},
     "not on tvmfuzz's list"),
    ({"target": {"kind": "llvm"}, "pipeline": "passes",
      "passes": ["FuseOpsByPattern:__import__('os').system('x')"]}, "not on tvmfuzz's list"),
    ({"target": {"kind": "llvm"}, "extra_passes": ["os:system"]}, "modules to import"),
    ({"target": {"kind": "llvm", "libs": "evil"}}, "target tvmfuzz does not make"),
    ({"target": {"kind": "llvm"}, "pipeline": "evil"}, "unknown pipeline"),
    ({"target": {"kind": "llvm"}, "hook": "x"}, "unknown fields"),
])
def test_case_naming_unknown_passes_or_modules_is_refused(tmp_path, variant, says):
    f = _case_with_variant(tmp_path, variant)
    for cmd in (["replay", str(f)], ["reduce", str(f), "--out", str(tmp_path / "r")]):
        r = _cli(*cmd, cwd=tmp_path)
        assert r.returncode == 2 and says in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "r").exists()


def test_a_module_inside_the_allowlist_that_runs_a_command_at_run_time_is_contained(
        jail_ok, tmp_path):
    """The allowlist covers the parse; IR may still name a C symbol to call when it runs.
    T.call_extern("system") passes the allowlist and runs a shell command when replay builds
    and runs the module: unjailed it leaves its mark, jailed it does not."""
    from worker.script_guard import check_script, comment_imports

    def module(mark):
        return textwrap.dedent(f"""
            from tvm.script import ir as I
            from tvm.script import relax as R
            from tvm.script import tirx as T

            @I.ir_module
            class Module:
                @T.prim_func(private=True)
                def shell(A: T.Buffer((1,), "int32"), B: T.Buffer((1,), "int32")):
                    B[0] = A[0] + T.call_extern("int32", "system", "touch {mark}")

                @R.function
                def main(x: R.Tensor((1,), "int32")) -> R.Tensor((1,), "int32"):
                    cls = Module
                    y = R.call_tir(cls.shell, (x,), out_ty=R.Tensor((1,), "int32"))
                    return y
        """)
    control, mark = tmp_path / "control", tmp_path / "mark"
    check_script(comment_imports(module(mark)))          # inside the allowlist
    f = tmp_path / "m.py"
    f.write_text(module(control))
    r = _cli("replay", str(f), "--times", "1", "--no-jail")
    assert r.returncode == 0 and control.exists(), r.stdout + r.stderr
    f.write_text(module(mark))
    r = _cli("replay", str(f), "--times", "1")   # it builds and runs (then the round trip
    assert r.returncode == 0 and "verdict:" in r.stdout, r.stdout + r.stderr   # may fail)
    assert not mark.exists()
