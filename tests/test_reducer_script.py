"""Reducing a user's TVMScript file (no program model): IR passes run in the sandbox child,
and 30+ bindings of noise around one crashing op come down to that op and its input."""
import ast
import os
import subprocess
import sys

from tvmfuzz.cli import main
from reducer.api import reduce_script
from reducer.pool import SandboxPool
from reducer.size import script_bindings

ACOSH = "unknown intrinsic Op(tirx.acosh)"


def acosh_noise_module(noise: int = 32) -> str:
    """A user-style module: ``noise`` float32 bindings (a chain with diamonds) around one
    float16 R.acosh whose result feeds the noise again, then a reshape, a reduction and a
    tuple; imports at the top as people write them."""
    ops = ["R.add({a}, {b})", "R.multiply({a}, {b})", "R.tanh({a})", "R.subtract({a}, {b})",
           "R.sigmoid({a})", "R.maximum({a}, {b})"]
    t = 'R.Tensor((4, 8), dtype="float32")'
    lines, prev, older = [], "x", "y"
    for i in range(noise):
        lines.append(f"            n{i}: {t} = " + ops[i % len(ops)].format(a=prev, b=older))
        older, prev = prev, f"n{i}"
        if i == noise // 2:
            lines += ['            h1: R.Tensor((4, 8), dtype="float16") = R.abs(h)',
                      '            h2: R.Tensor((4, 8), dtype="float16") = R.add(h1, h1)',
                      '            z: R.Tensor((4, 8), dtype="float16") = R.acosh(h2)',
                      f'            z32: {t} = R.astype(z, dtype="float32")',
                      f"            m: {t} = R.add({prev}, z32)"]
            prev = "m"
    lines += [f'            r: R.Tensor((32,), dtype="float32") = R.reshape({prev}, R.shape([32]))',
              '            s: R.Tensor((), dtype="float32") = R.sum(r)',
              f'            out: R.Tuple({t}, R.Tensor((), dtype="float32")) = ({older}, s)',
              "            R.output(out)"]
    body = "\n".join(lines)
    return ("from tvm.script import ir as I\nfrom tvm.script import relax as R\n\n\n"
            "@I.ir_module\nclass Module:\n    @R.function\n"
            f"    def main(x: {t}, y: {t}, h: R.Tensor((4, 8), dtype=\"float16\")):\n"
            f"        with R.dataflow():\n{body}\n        return out\n")


def test_the_fixture_is_what_it_claims():
    text = acosh_noise_module()
    assert script_bindings(text) >= 30
    assert text.count("R.acosh") == 1


def test_noise_around_a_crashing_op_reduces_to_that_op(tmp_path):
    text = acosh_noise_module()
    red = reduce_script(text, out_dir=tmp_path)
    assert ACOSH in red.signature
    assert red.stats["start"] == "printed"
    assert script_bindings(red.reduced) == 1
    fn = next(n for n in ast.walk(ast.parse(red.reduced)) if isinstance(n, ast.FunctionDef))
    assert len(fn.args.args) == 1                     # only the input acosh needs
    assert "R.acosh(" in red.reduced and "float16" in red.reduced
    assert red.outcome.reproduction["reproduced"] == 3
    assert red.stats["oracle_calls"] < 60
    for f in ("case.py", "repro.py", "report.md"):
        assert (tmp_path / f).exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "repro.py").write_text((tmp_path / "repro.py").read_text())
    r = subprocess.run([sys.executable, "repro.py"], cwd=fresh, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr


def test_ir_jobs_run_in_the_sandbox_and_refuse_unsafe_text():
    with SandboxPool(1, 60) as pool:
        ok = pool.run({"kind": "reducer.ir_count", "text": acosh_noise_module(6).replace(
            "from tvm", "# from tvm")})
        assert ok["status"] == "ok" and ok["result"]["counts"]["remove_bindings"] > 6
        evil = 'x = __import__("os")\n'
        r = pool.run({"kind": "reducer.ir_apply", "text": evil, "pass": "remove_bindings",
                      "chosen": [[0]]})
        assert r["status"] == "error" and "UnsafeScript" in r["error"]


def test_cli_reduces_a_script_file(tmp_path, capsys):
    f = tmp_path / "model.py"
    f.write_text(acosh_noise_module(8))
    assert main(["reduce", str(f), "--out", str(tmp_path / "out"), "-j", "2"]) == 0
    out = capsys.readouterr().out
    assert "reproduces 3/3" in out and "tirx.acosh" in out
    assert script_bindings((tmp_path / "out" / "case.py").read_text()) == 1
