"""Writing results without losing anything: every file is written to a temporary name and
renamed into place (a reader never sees half a file, a kill never leaves one), and a file that
already exists with other content is kept as ``name.~N~`` first (like ``cp --backup=numbered``).
Nothing here deletes."""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

PARTIAL = "partial."   # prefix of a reduction's best-so-far files; the final write removes them


def _backup(path: Path) -> Path:
    n = 1
    taken = {p.name for p in path.parent.iterdir()}
    while f"{path.name}.~{n}~" in taken:
        n += 1
    dst = path.with_name(f"{path.name}.~{n}~")
    try:
        os.link(path, dst)   # a second name for the old content; the rename below is atomic
    except OSError:
        shutil.copy2(path, dst)
    return dst


def write_text(path: Path, text: str, mode: int | None = None, backup: bool = True) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if backup and path.exists():
        try:
            if path.read_text() == text:
                return path
        except (OSError, UnicodeDecodeError):
            pass
        _backup(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)   # our own temporary file, never a result
        raise
    return path


def new_dir(parent: Path, stem: str) -> Path:
    """A directory under ``parent`` that did not exist before: ``stem``, ``stem-2``, ..."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^\w.-]+", "_", stem)[:80] or "item"
    n = 1
    while True:
        d = parent / (stem if n == 1 else f"{stem}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            n += 1


def check_writable(out: Path) -> Path:
    """Create ``out`` now so that an unwritable place fails before any work."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fd, probe = tempfile.mkstemp(prefix=".tvmfuzz-write-test", dir=out)
    os.close(fd)
    os.unlink(probe)
    return out


class OutDir:
    """One run's output directory: a file there from before is backed up the first time this
    run writes it; later writes (progress) replace this run's own earlier version."""

    def __init__(self, path: Path):
        self.path = check_writable(path)
        self._mine: set[str] = set()

    def write(self, name: str, text: str, mode: int | None = None) -> Path:
        p = write_text(self.path / name, text, mode, backup=name not in self._mine)
        self._mine.add(name)
        return p

    def __truediv__(self, name: str) -> Path:
        return self.path / name
