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
