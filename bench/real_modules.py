"""How tvmfuzz takes modules it did not write: TVM's own test modules, replayed as a new user
would (`tvmfuzz replay FILE`).

    python bench/real_modules.py extract SRC_DIR OUT_DIR [--limit N]
    python bench/real_modules.py replay OUT_DIR [--timeout 60] [--jobs 1] [--no-jail]
                                        [--json results.json]
    python bench/real_modules.py run SRC_DIR OUT_DIR ...      (both)

``extract`` reads each ``*.py`` under SRC_DIR with Python's ``ast`` (nothing is executed) and
writes every class decorated ``@I.ir_module`` / ``@tvm.script.ir_module`` (top-level or nested
in a function or class) as its own file ``<test file>__<line>__<Class>.py``: the class's
source, dedented, under the header ``from tvm.script import ir as I, relax as R, tir as T``.

``replay`` judges each such file once the way ``tvmfuzz replay`` does
(``worker.replay.replay_file``: the script guard, the sandbox, the jail unless --no-jail) and
prints: modules, the share with a verdict (pass/fail/invalid, counted per kind), the files
the script guard refused, and every ``fail`` with its signature, so each can be explained.
A module the script guard refuses (it could run code when parsed) is counted apart: tvmfuzz
never parses it.
"""
from __future__ import annotations

import argparse
import ast
import collections
import json
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HEADER = "from tvm.script import ir as I, relax as R, tir as T\n\n"
MODULE_DECORATORS = ("I.ir_module", "ir_module", "tvm.script.ir_module",
                     "tvm.script.ir.ir_module", "ir.ir_module")


def _decorator_name(d: ast.expr) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    try:
        return ast.unparse(d)
    except Exception:  # noqa: BLE001
        return ""


def modules_in(text: str) -> list[tuple[int, str, str]]:
    """(line, class name, source) of every @ir_module class in a Python file's text."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    lines = text.splitlines(keepends=True)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        if not any(_decorator_name(d) in MODULE_DECORATORS for d in node.decorator_list):
            continue
        start = min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1
        src = textwrap.dedent("".join(lines[start:node.end_lineno]))
        out.append((node.lineno, node.name, src))
    return out


def extract(src: Path, out: Path, limit: int = 0) -> int:
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for f in sorted(src.rglob("*.py")):
        for line, name, body in modules_in(f.read_text(errors="replace")):
            (out / f"{f.stem}__{line}__{name}.py").write_text(HEADER + body)
            n += 1
            if limit and n >= limit:
                return n
    return n


def replay(out: Path, timeout: float, jobs: int, jail_on: bool) -> list[dict]:
    from worker.replay import replay_file
    from worker.user_input import InputError, read_input

    jail = None
    if jail_on:
        from worker.jail import require

        jail = require(hide=(str(Path.cwd()),))
    files = sorted(out.glob("*.py"))

    def one(f: Path) -> dict:
        t0 = time.monotonic()
        try:
            read_input(f)
        except InputError as e:
            return {"file": f.name, "verdict": "refused", "kind": "script_guard",
                    "message": str(e).splitlines()[0][:200], "signature": "", "seconds": 0.0}
        try:
            r = replay_file(f, times=1, timeout=timeout, jail=jail)
        except Exception as e:  # noqa: BLE001 - tvmfuzz itself broke: that is a result too
            return {"file": f.name, "verdict": "tvmfuzz_error", "kind": type(e).__name__,
                    "message": str(e).splitlines()[0][:200] if str(e) else "",
                    "signature": "", "seconds": round(time.monotonic() - t0, 1)}
        return {"file": f.name, "verdict": r["verdict"], "kind": r["kind"],
                "stage": r["stage"], "message": (r["message"] or "")[:300],
                "signature": r["signature"], "seconds": round(time.monotonic() - t0, 1)}

    with ThreadPoolExecutor(jobs) as pool:
        results = []
        for i, r in enumerate(pool.map(one, files), 1):
            results.append(r)
            print(f"[{i}/{len(files)}] {r['verdict']:8} {r['kind'] or '-':18} {r['file']}",
                  file=sys.stderr, flush=True)
    return results


def summarize(results: list[dict]) -> str:
    n = len(results)
    verdicts = collections.Counter(r["verdict"] for r in results)
    kinds = collections.Counter((r["verdict"], r["kind"] or "-") for r in results)
    judged = sum(verdicts[v] for v in ("pass", "fail", "invalid", "rejected"))
    lines = [f"modules: {n}",
             f"with a verdict (pass/fail/invalid): {judged}/{n}"
             + (f" ({100 * judged / n:.0f}%)" if n else ""),
             "by verdict and kind:"]
    for (v, k), c in sorted(kinds.items(), key=lambda x: (x[0][0], -x[1])):
        lines.append(f"  {v:13} {k:22} {c}")
    fails = [r for r in results if r["verdict"] == "fail"]
    lines.append(f"fails: {len(fails)}")
    for r in fails:
        lines.append(f"  {r['file']}\n      {r['signature']}")
    odd = [r for r in results if r["verdict"] not in ("pass", "fail", "invalid", "rejected")]
    if odd:
        lines.append("no verdict:")
        for r in odd:
            lines.append(f"  {r['file']}: {r['verdict']} {r['kind']}: {r['message']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["extract", "replay", "run"])
    ap.add_argument("dirs", nargs="+", help="SRC_DIR OUT_DIR (extract, run) or OUT_DIR")
    ap.add_argument("--limit", type=int, default=0, help="extract at most this many modules")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per module")
    ap.add_argument("--jobs", type=int, default=1, help="modules replayed at once")
    ap.add_argument("--no-jail", dest="jail", action="store_false")
    ap.add_argument("--json", default=None, help="also write every result here")
    a = ap.parse_args(argv)
    if a.what in ("extract", "run"):
        if len(a.dirs) != 2:
            ap.error("extract and run take SRC_DIR OUT_DIR")
        n = extract(Path(a.dirs[0]), Path(a.dirs[1]), a.limit)
        print(f"extracted {n} modules into {a.dirs[1]}")
        if a.what == "extract":
            return 0
    out = Path(a.dirs[-1])
    t0 = time.monotonic()
    results = replay(out, a.timeout, a.jobs, a.jail)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))
    print(summarize(results))
    print(f"seconds: {time.monotonic() - t0:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
