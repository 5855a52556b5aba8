"""Other TVM releases: one isolated virtualenv per release under the tvmfuzz home.

``$TVMFUZZ_HOME`` (default ``~/.cache/tvmfuzz``) holds ``envs/<version>/``: a virtualenv with
``apache-tvm==<version>``, the ``apache-tvm-ffi`` that release works with, numpy and ml_dtypes,
plus ``tvmfuzz-env.json`` (what was installed; written last, so a directory without it is a
half-made env). tvmfuzz itself is not installed there: the sandbox server runs under the env's
interpreter with the repository on ``PYTHONPATH`` (``worker/sandbox.py``), and
``fuzz/compat.py`` hides the API differences between releases.

The *default release* is the TVM installed with tvmfuzz (the interpreter running it).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
MARKER = "tvmfuzz-env.json"

# apache-tvm-ffi per release. pip's own choice (the newest ffi) is wrong for these: 0.25 fails
# to import with ffi >= 0.1.13, and ffi 0.1.15.x segfaults printing modules with metadata
# (mod.script(show_meta=True), which every case goes through) under 0.26 and 0.27.
# A release not listed here gets what pip chooses, recorded in the env's tvmfuzz-env.json.
FFI_PINS = {
    "0.25.0": "0.1.12",
    "0.26.0": "0.1.14.post1",
    "0.27.0": "0.1.14.post1",
    "0.27.0.post1": "0.1.14.post1",
}
# Frontends an env can get (``tvmfuzz env add VERSION --with NAME``): the packages a case kind
# needs in the interpreter under test. Installed at the versions the default release runs with
# (so a finding compares across releases with one exporter and one reference), else these ranges.
FRONTENDS = {"onnx": {"onnx": ">=1.23,<1.24", "onnxruntime": ">=1.32,<1.33"}}
_VERSION = re.compile(r"\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?")

# Run under the new env's interpreter (repository on PYTHONPATH): import TVM, print its
# version, and print a module with metadata, which a mismatched tvm-ffi turns into a segfault.
_CHECK = r"""
import json, sys
from importlib import metadata
import numpy as np
import tvm
from tvm import relax
from fuzz import compat
bb = relax.BlockBuilder()
x = relax.Var("x", compat.tensor_type([2, 3], "float32"))
with bb.function("main", [x]):
    y = bb.emit(relax.op.add(x, relax.const(np.arange(6, dtype="float32").reshape(2, 3))))
    bb.emit_func_output(y)
assert "metadata" in bb.get().script(show_meta=True)
print(json.dumps({"tvm": tvm.__version__, "python": sys.version.split()[0],
                  **{k: metadata.version(k) for k in ("apache-tvm-ffi", "numpy", "ml_dtypes")}}))
"""


class ReleaseError(Exception):
    """A user-facing, one-line problem with a release or an env (exit status 2)."""


@dataclass
class Release:
    version: str        # the release name: the env's directory, or the default's tvm version
    tvm: str            # tvm.__version__ (as installed)
    python: str         # the interpreter the sandbox runs under
    default: bool = False
    ffi: str = ""
    path: str = ""      # the env directory ("" for the default release)

    def to_json(self) -> dict:
        return asdict(self)


def home() -> Path:
    where = os.environ.get("TVMFUZZ_HOME") or str(Path.home() / ".cache" / "tvmfuzz")
    return Path(os.path.abspath(os.path.expanduser(where)))


def envs_dir() -> Path:
    return home() / "envs"


def env_python(env: Path) -> Path:
    return env / "bin" / "python"


def version_key(v: str):
    try:
        from packaging.version import Version

        return (0, Version(v))
    except Exception:  # noqa: BLE001  (no packaging, or not a PEP 440 version)
        return (1, tuple(int(x) for x in re.findall(r"\d+", v)))


def default_release() -> Release:
    """The TVM installed with tvmfuzz, read from package metadata (TVM is not imported here)."""
    try:
        tvm = metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        tvm = "(unknown)"
    try:
        ffi = metadata.version("apache-tvm-ffi")
    except metadata.PackageNotFoundError:
        ffi = ""
    return Release(tvm, tvm, sys.executable, True, ffi)


def installed() -> list[Release]:
    """Every complete env under the home, newest release first."""
    out = []
    d = envs_dir()
    if d.is_dir():
        for env in d.iterdir():
            info = _marker(env)
            if info is not None and env_python(env).exists():
                out.append(Release(env.name, info.get("tvm", ""), str(env_python(env)), False,
                                   info.get("apache-tvm-ffi", ""), str(env)))
    return sorted(out, key=lambda r: version_key(r.version), reverse=True)


def all_releases() -> list[Release]:
    """The default release and every installed env, newest first (the default first among
    equals)."""
    rels = [default_release()] + installed()
    return sorted(rels, key=lambda r: (version_key(r.version), r.default), reverse=True)


def _marker(env: Path) -> Optional[dict]:
    try:
        return json.loads((env / MARKER).read_text())
    except (OSError, ValueError):
        return None


def resolve(version: str) -> str:
    """The interpreter of release ``version``: an installed env, or the default release."""
    env = envs_dir() / version
    if _marker(env) is not None and env_python(env).exists():
        return str(env_python(env))
    if version == default_release().version:
        return sys.executable
    raise ReleaseError(f"--env {version}: no such release installed; run `tvmfuzz env add "
                       f"{version}` first (`tvmfuzz env list` shows what is installed)")


def check_version(version: str) -> str:
    if not _VERSION.fullmatch(version or ""):
        raise ReleaseError(f"{version!r} is not a TVM release version (e.g. 0.25.0)")
    return version


def _last_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("ERROR:")]
    pick = errs[-1] if errs else (lines[-1] if lines else "no output")
    return pick[:300]


def frontend_packages(names) -> list[str]:
    """pip requirements for the frontends ``names`` (keys of FRONTENDS)."""
    bad = [n for n in names if n not in FRONTENDS]
    if bad:
        raise ReleaseError(f"--with {bad[0]}: choose from {', '.join(FRONTENDS)}")
    out = []
    for n in names:
        for pkg, spec in FRONTENDS[n].items():
            try:
                out.append(f"{pkg}=={metadata.version(pkg)}")
            except metadata.PackageNotFoundError:
                out.append(pkg + spec)
    return out


def add_frontends(env: Path, names, echo: Callable[[str], None] = print,
                  timeout: float = 1800.0) -> list[str]:
    """Install the frontends ``names`` into an existing env (recorded in its marker)."""
    pkgs = frontend_packages(names)
    if not pkgs:
        return []
    py = str(env_python(env))
    echo(f"installing {' '.join(pkgs)}")
    _step([py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
           "--progress-bar", "off", *pkgs], f"pip could not install {', '.join(pkgs)}", timeout)
    mods = " ".join(sorted({m for n in names for m in FRONTENDS[n]}))
    _step([py, "-c", f"import {', '.join(mods.split())}"],
          f"{', '.join(names)} installed in {env} but does not import", 300)
    info = _marker(env) or {}
    info["frontends"] = sorted(set(info.get("frontends", [])) | set(names))
    (env / MARKER).write_text(json.dumps(info, indent=1) + "\n")
    return pkgs


def add(version: str, echo: Callable[[str], None] = print,
        base_python: str = sys.executable, timeout: float = 1800.0,
        frontends=()) -> tuple[Release, bool]:
    """Create the env for ``version``; returns (release, created?). ``frontends``: names in
    FRONTENDS whose packages go in too (also into an env that exists). A failed step removes
    what it made and raises ReleaseError with one line saying why."""
    check_version(version)
    frontend_packages(frontends)    # an unknown name fails before anything is made
    env = envs_dir() / version
    if _marker(env) is not None and env_python(env).exists():
        have = set((_marker(env) or {}).get("frontends", []))
        add_frontends(env, [n for n in frontends if n not in have], echo, timeout)
        r = [x for x in installed() if x.version == version][0]
        return r, False
    if env.exists():
        echo(f"removing a half-made env in {env}")
        shutil.rmtree(env)
    made = [d for d in (home(), envs_dir()) if not d.exists()]   # removed again on failure
    env.parent.mkdir(parents=True, exist_ok=True)
    pin = FFI_PINS.get(version)
    t0 = time.monotonic()
    try:
        echo(f"creating a virtualenv in {env}")
        _step([base_python, "-m", "venv", str(env)], "cannot create a virtualenv", timeout)
        py = str(env_python(env))
        pkgs = [f"apache-tvm=={version}"] + ([f"apache-tvm-ffi=={pin}"] if pin else []) \
            + ["numpy", "ml_dtypes"]
        echo(f"installing {' '.join(pkgs)}"
             + ("" if pin else " (apache-tvm-ffi: pip's choice)"))
        _step([py, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
               "--progress-bar", "off", *pkgs], f"pip could not install apache-tvm=={version}",
              timeout)
        echo("checking: import tvm, print a module")
        out = _step([py, "-c", _CHECK], f"apache-tvm {version} is installed but does not work",
                    300, env={"PYTHONPATH": str(ROOT)})
        info = json.loads(out.strip().splitlines()[-1])
        info.update(version=version, ffi_pinned=bool(pin),
                    created=time.strftime("%Y-%m-%dT%H:%M:%S"), base_python=base_python)
        (env / MARKER).write_text(json.dumps(info, indent=1) + "\n")
        add_frontends(env, list(frontends), echo, timeout)
    except BaseException:
        shutil.rmtree(env, ignore_errors=True)
        for d in reversed(made):
            try:
                d.rmdir()
            except OSError:
                pass
        raise
    info = _marker(env)
    info["seconds"] = round(time.monotonic() - t0, 1)
    (env / MARKER).write_text(json.dumps(info, indent=1) + "\n")
    return Release(version, info["tvm"], py, False, info.get("apache-tvm-ffi", ""), str(env)), True


def _step(cmd: list, what: str, timeout: float, env: Optional[dict] = None) -> str:
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("PYTHONHOME", None)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env,
                           cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        raise ReleaseError(f"{what}: no result within {timeout:.0f} s")
    except OSError as e:
        raise ReleaseError(f"{what}: {e}")
    if r.returncode != 0:
        why = (_last_error(r.stderr + "\n" + r.stdout) if r.returncode > 0
               else f"killed by signal {-r.returncode}")
        raise ReleaseError(f"{what}: {why}")
    return r.stdout


def remove(version: str) -> Path:
    env = envs_dir() / check_version(version)
    if not env.is_dir():
        raise ReleaseError(f"no env for release {version} in {envs_dir()} "
                           "(`tvmfuzz env list` shows what is installed)")
    shutil.rmtree(env)
    return env
