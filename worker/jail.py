"""The jail: what the sandbox server runs inside when its input came from outside.

Parsing TVMScript evaluates the Python in it, and TVM's Python API can start processes, load
shared libraries, read and write files and open sockets. The allowlist (``script_guard``) keeps
such calls out of the text; the jail makes a call that slips past it harmless. A fork with
rlimits (``sandbox.py``) stops a crash, not an attacker, so every parse, build and run of text
from a user's file or from the broker happens in a server started through Bubblewrap (``bwrap``,
Debian's ``bubblewrap``), which uses the kernel's namespaces:

* no network: a new network namespace holds only its own loopback device;
* the filesystem read-only (``/`` bound read-only), except a private, empty ``/tmp`` (the
  scratch directory; TVM links its shared objects there) that vanishes with the jail;
* no access to the user's home, the corpus or the campaign's output: empty directories are
  mounted over them; only the directories the interpreter imports from are bound back,
  read-only (the installed TVM, tvmfuzz's own code);
* an unprivileged identity: run as root, the server drops to ``nobody`` (``setpriv``, no
  capabilities, no supplementary groups); run as another user, it keeps that user's identity in
  a new user namespace without capabilities;
* no new privileges (``PR_SET_NO_NEW_PRIVS``: set-uid programs do not elevate), new PID, IPC and
  UTS namespaces, a new session (no terminal to inject into), an environment of a few named
  variables (a broker password in the caller's environment does not reach the jail), and death
  with its parent. The sandbox's resource limits still apply inside.

Where the host cannot provide it (no ``bwrap``, namespaces refused), ``problem()`` says why in
one line and commands that need the jail stop before any work (fail closed); ``--no-jail`` is
for a trusted user's own files.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Optional

NOBODY = 65534
SCRATCH = "/tmp"
# Variables the jailed server gets from the caller's environment; everything else is dropped.
KEEP_ENV = ("PATH", "PYTHONPATH", "MALLOC_ARENA_MAX", "LANG", "LC_ALL", "TZ",
            "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS", "TVM_NUM_THREADS",
            "CUDA_VISIBLE_DEVICES", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER")
INSTALL_HINT = ("install Bubblewrap (Debian: apt-get install bubblewrap), or pass --no-jail "
                "for your own trusted files")


class JailUnavailable(RuntimeError):
    """The host cannot provide the jail; the message is one line for the user."""


@dataclass(frozen=True)
class Jail:
    """How to start a command jailed. ``hide``: directories the jail must not see besides the
    user's home (the corpus, the output directory)."""

    hide: tuple = field(default_factory=tuple)

    def wrap(self, argv: list[str], env: dict) -> tuple[list[str], dict]:
        """(argv, env) that run ``argv`` (an interpreter and its arguments) in the jail."""
        bwrap, setpriv = _tools()
        python = argv[0]
        cmd = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
               "--unshare-net", "--unshare-ipc", "--unshare-pid", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session",
               "--chdir", "/tmp", "--clearenv"]
        cmd += _mounts(self._hidden(), _needed_paths(python, env.get("PYTHONPATH", "")))
        inner = {k: env[k] for k in KEEP_ENV if k in env}
        inner.update(HOME="/tmp", TMPDIR="/tmp")
        for k, v in sorted(inner.items()):
            cmd += ["--setenv", k, v]
        if os.geteuid() == 0:
            # Root keeps its capabilities in bwrap without a user namespace; setpriv then drops
            # to nobody for good before the interpreter starts.
            cmd += ["--", setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                    "--no-new-privs", "--bounding-set=-all", "--inh-caps=-all"]
        else:
            cmd[1:1] = ["--unshare-user", "--cap-drop", "ALL"]
            cmd += ["--"]
        return cmd + list(argv), {"PATH": env.get("PATH", os.defpath)}

    def _hidden(self) -> list[str]:
        homes = {os.path.expanduser("~"), os.environ.get("HOME", "")}
        if os.geteuid() == 0:
            homes.add("/root")
        dirs = [d for d in homes | {os.path.abspath(h) for h in self.hide} if d and d != "/"]
        # /tmp too: the jail's scratch directory is a fresh tmpfs over it (an interpreter
        # installed under /tmp is bound back like any other).
        return sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)} | {SCRATCH})


def _mounts(hidden: list[str], needed: list[str]) -> list[str]:
    """bwrap arguments: an empty tmpfs over each hidden directory, and the needed directories
    that lie under one bound back read-only, ordered by depth so that the deeper rule wins (a
    corpus inside the repository stays hidden although the repository is bound back). The
    directories between a tmpfs and a bound path are made world-readable explicitly (bwrap
    would make them 0700, which the unprivileged identity cannot enter)."""
    hidden = [h for h in hidden if h not in needed]   # code must import: its own dir stays
    ops = [(d, "hide") for d in hidden]
    for d in needed:
        if any(_under(d, n) and d != n for n in needed):
            continue   # bound with the directory above it
        tops = [h for h in hidden if _under(d, h) and d != h]
        if tops:
            ops.append((d, "need"))
            top = max(tops, key=len)
            ops += [(a, "dir") for a in _ancestors(d, top)]
    out: list[str] = []
    order = {"hide": 0, "dir": 1, "need": 2}
    for path, op in sorted(set(ops), key=lambda o: (o[0].count(os.sep), order[o[1]], o[0])):
        mode = "1777" if path == SCRATCH else "0755"   # the scratch directory is writable
        out += {"hide": ["--perms", mode, "--tmpfs", path],
                "dir": ["--perms", "0755", "--dir", path],
                "need": ["--ro-bind", path, path]}[op]
    return out


def _ancestors(path: str, top: str) -> list[str]:
    """The directories strictly between ``top`` and ``path``."""
    out, p = [], os.path.dirname(path)
    while p != top and _under(p, top):
        out.append(p)
        p = os.path.dirname(p)
    return out


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=8)
def _needed_paths(python: str, pythonpath: str) -> list[str]:
    """The directories ``python`` imports from (its prefixes and sys.path, with PYTHONPATH),
    asked of the interpreter itself, unjailed: it is our own (the default release or an
    installed env), never the user's."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    code = ("import json, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix,"
            " *sys.path]))")
    try:
        out = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                             timeout=60, check=True).stdout
        paths = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as e:
        raise JailUnavailable(f"cannot ask {python} for its paths: {e}")
    exe = os.path.realpath(python)
    paths += [os.path.dirname(os.path.dirname(exe)), os.path.dirname(os.path.abspath(python))]
    real = {os.path.realpath(p) for p in paths if p}
    return sorted(p for p in real if os.path.isdir(p))


def _tools() -> tuple[str, str]:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise JailUnavailable(f"the jail needs bwrap, which is not installed: {INSTALL_HINT}")
    setpriv = shutil.which("setpriv") or ""
    if os.geteuid() == 0 and not setpriv:
        raise JailUnavailable("the jail needs setpriv (util-linux) to drop root: install "
                              "util-linux, or pass --no-jail for your own trusted files")
    return bwrap, setpriv


@functools.lru_cache(maxsize=1)
def problem() -> Optional[str]:
    """Why this host cannot jail (one line), or None. Tries the real thing once: bwrap may be
    installed where the kernel or a container refuses namespaces."""
    try:
        argv, env = Jail().wrap([sys.executable, "-c", "print('jailed')"], dict(os.environ))
    except JailUnavailable as e:
        return str(e)
    try:
        r = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"the jail could not start ({e}): {INSTALL_HINT}"
    if r.returncode != 0 or r.stdout.strip() != "jailed":
        why = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        return f"the jail could not start on this host ({why[:200]}): {INSTALL_HINT}"
    return None


def require(hide: tuple = ()) -> Jail:
    """A jail, or ``JailUnavailable`` saying why this host cannot provide one."""
    why = problem()
    if why:
        raise JailUnavailable(why)
    return Jail(hide=tuple(hide))
