import json
import subprocess
import sys

USER = '''from tvm.script import ir as I
from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(h: R.Tensor((4,), dtype="float16")) -> R.Tensor((4,), dtype="float16"):
        z = R.acosh(h)
        return z
'''


def _replay(path, *args):
    return subprocess.run([sys.executable, "-m", "tvmfuzz", "replay", str(path), *args],
                          capture_output=True, text=True, timeout=300)


def test_user_tvmscript_with_imports_replays_with_its_signature(tmp_path):
    f = tmp_path / "user.py"
    f.write_text(USER)
    r = _replay(f, "--format", "json", "--times", "2")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == "fail" and out["kind"] == "crash"
    assert "Op(tirx.acosh)" in out["signature"] and out["reproduced"] == 2


def test_script_that_runs_code_is_refused_before_parsing(tmp_path):
    marker = tmp_path / "pwned"
    f = tmp_path / "evil.py"
    f.write_text(USER.replace('R.Tensor((4,), dtype="float16")) ->',
                              f'R.Tensor((__import__("os").system("touch {marker}"),), '
                              'dtype="float16")) ->'))
    r = _replay(f)
    assert r.returncode == 2 and "refused" in r.stderr
    assert not marker.exists()


def test_a_module_of_primfuncs_only_is_tvmfuzz_s_limit_not_a_tvm_crash(tmp_path):
    f = tmp_path / "prim.py"
    f.write_text('from tvm.script import tirx as T\n\n@T.prim_func\n'
                 'def main(A: T.Buffer((4,), "float32")):\n'
                 '    for i in range(4):\n        A[i] = A[i] + T.float32(1)\n')
    r = _replay(f, "--format", "json", "--times", "1")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert (got["verdict"], got["kind"]) == ("invalid", "unsupported_input"), got


def test_first_verdict_comes_before_the_repeats_and_a_budget_cuts_them(tmp_path):
    """A large module takes minutes a run: the verdict is printed after the first run, and
    the repeats stop at --budget (JSON: times = the runs made)."""
    f = tmp_path / "user.py"
    f.write_text(USER)
    r = _replay(f, "--times", "2")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("verdict: fail") and "first run" in lines[0], r.stdout
    assert any("more times" in ln for ln in lines[1:-1]) and lines[-1] == "reproduced 2/2"
    r = _replay(f, "--times", "4", "--budget", "0s", "--format", "json")
    got = json.loads(r.stdout)
    assert (got["times"], got["asked"], got["reproduced"]) == (1, 4, 1), got
    assert "budget" in got["stopped"]


def test_the_time_limit_grows_with_the_module():
    from worker.replay import auto_timeout, text_bindings

    lines = "".join(f"        v{i}: R.Tensor((), \"float32\") = R.add(x, x)\n"
                    for i in range(20000))
    n = text_bindings(lines)
    assert n == 20000
    assert auto_timeout(120, 10) == 120 and auto_timeout(120, n) >= 300
