"""The pinned TVM and tvm-ffi must print modules with metadata and save JSON without dying.

apache-tvm-ffi 0.1.15.x segfaults in both; a child process turns a segfault into a failure
instead of killing the test run."""
import subprocess
import sys
from importlib.metadata import version

import pytest

PROBE = r"""
import numpy as np, tvm
from tvm import relax
bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorType((2, 3), "float32"))
with bb.function("main", [x]):
    c = relax.const(np.arange(6, dtype="float32").reshape(2, 3))
    y = bb.emit(relax.op.add(x, c))
    bb.emit_func_output(y)
mod = bb.get()
text = mod.script(show_meta=True)
assert "metadata" in text, text
js = tvm.ir.save_json(mod)
tvm.ir.assert_structural_equal(tvm.ir.load_json(js), mod)
print("OK")
"""


def test_pinned_versions_installed():
    assert version("apache-tvm") == "0.27.0.post1"
    assert version("apache-tvm-ffi") == "0.1.14.post1"


def test_printing_with_meta_and_save_json_survive():
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode} (negative = killed by signal): {r.stderr[-2000:]}"
    assert r.stdout.strip().endswith("OK")
