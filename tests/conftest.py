import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Subprocesses the tests start (`python -m tvmfuzz`, repro.py) import this checkout too, not
# whichever tvmfuzz an editable install elsewhere points at.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])

# Property tests compile real TVM modules: examples are slow, so no deadline, few examples by
# default. The default draws the same examples every run: a property test over real TVM finds
# new TVM bugs now and then (strided_slice's once), and the test suite must not turn red at
# random for it; `HYPOTHESIS_PROFILE=thorough` explores new examples, many more of them.
settings.register_profile("default", deadline=None, max_examples=15, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large])
settings.register_profile("thorough", deadline=None, max_examples=200,
                          suppress_health_check=list(HealthCheck))
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    # The CLI's commands for input from outside run jailed (bubblewrap). CI installs it and its
    # tests must run jailed; elsewhere, a machine without it runs them unjailed (tests/
    # test_jail.py then skips) rather than failing every replay.
    from worker.jail import problem

    why = problem()
    if why and not os.environ.get("CI"):
        os.environ["TVMFUZZ_JAIL"] = "0"
        config._tvmfuzz_jail = f"jail unavailable, CLI tests run with TVMFUZZ_JAIL=0: {why}"


def pytest_report_header(config):
    return getattr(config, "_tvmfuzz_jail", None)


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", help="run tests marked slow")
    parser.addoption("--releases", action="store_true",
                     help="run tests marked release (they install other TVM releases with "
                          "`tvmfuzz env add` into .cache/tvmfuzz-home, kept between runs)")
    parser.addoption("--deploy", action="store_true",
                     help="run tests marked deploy (a fresh virtualenv with the package "
                          "installed without extras, and the compose stack's commands)")


def pytest_collection_modifyitems(config, items):
    skips = []
    if not config.getoption("--runslow"):
        skips.append(("slow", pytest.mark.skip(reason="slow: run with --runslow")))
    if not config.getoption("--releases"):
        skips.append(("release", pytest.mark.skip(
            reason="needs other TVM releases: run with --releases")))
    if not config.getoption("--deploy"):
        skips.append(("deploy", pytest.mark.skip(reason="installs into a fresh virtualenv: "
                                                        "run with --deploy")))
    if "torch" not in (config.getoption("-m") or ""):
        # Their own CI step, after the torch extra is installed: importing torch makes every
        # process that imports TVM slower too (tvm_ffi imports torch whenever it can).
        skips.append(("torch", pytest.mark.skip(reason="PyTorch cases: run with -m torch")))
    for item in items:
        for name, skip in skips:
            # Markers only: item.keywords also holds directory names (a checkout in deploy/).
            if item.get_closest_marker(name):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def release_home():
    """0.25.0 and 0.26.0, installed by the real `tvmfuzz env add` into .cache/tvmfuzz-home (a
    no-op once cached): for any test marked ``release`` that runs on them, whichever file comes
    first."""
    import subprocess

    home = ROOT / ".cache" / "tvmfuzz-home"
    env = dict(os.environ, TVMFUZZ_HOME=str(home))
    for version in ("0.25.0", "0.26.0"):
        r = subprocess.run([sys.executable, "-m", "tvmfuzz", "env", "add", version],
                           capture_output=True, text=True, timeout=1800, env=env, cwd=ROOT)
        assert r.returncode == 0, r.stderr
    return home
