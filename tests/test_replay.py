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


def test_the_first_verdict_is_handed_out_before_any_repeat_runs(tmp_path, monkeypatch):
    """on_first is called after exactly one run; the repeats then stop at the budget."""
    from fuzz.outcome import Outcome
    from worker import replay

    runs = []

    class FakeSandbox:
        def run(self, job):
            runs.append(job)
            o = Outcome("fail", "crash", "build", error_type="E", message="m", seconds=0.01)
            return {"status": "ok", "result": o.to_json()}

    class FakeRunner:
        def __init__(self, **kw):
            self.sandbox, self.timeout = FakeSandbox(), kw["timeout"]

        def close(self):
            pass

    monkeypatch.setattr(replay, "SandboxRunner", FakeRunner)
    f = tmp_path / "user.py"
    f.write_text(USER)
    seen = []
    got = replay.replay_file(f, times=4, on_first=lambda r: seen.append((len(runs), r)))
    assert [n for n, _ in seen] == [1] and seen[0][1]["times"] == 1
    assert got["times"] == got["reproduced"] == 4 and got["timeout"] == 120.0
    runs.clear()
    got = replay.replay_file(f, times=4, budget=0.0)
    assert len(runs) == 1 and got["times"] == 1 and got["asked"] == 4
