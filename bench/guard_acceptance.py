"""How much real-world TVMScript the script guard accepts.

    python bench/guard_acceptance.py [DIR] [--show N] [--parse] [--dump OUTDIR]

Scans the .py files under DIR (default: the installed TVM package) for TVMScript: classes and
functions decorated with ``I.ir_module`` / ``T.prim_func`` / ``R.function`` (or the
``tvm.script.*`` spellings), both in code and in the code examples of docstrings. Each one is
cut out with ``ast`` (decorators to end of body, dedented), its import lines commented as
replay does, and given to ``worker.script_guard.check_script``.

Prints how many are accepted, split into self-contained snippets and those reading names the
snippet never binds (closure variables of the file: replay would not have them, TVM's parser
stops at them, nothing runs); then the refusals grouped by reason (line numbers dropped) with
one location each. ``--parse`` also parses the accepted snippets, and the refused
self-contained ones, with TVM in this process: it runs their Python, so use it only on trusted
files such as TVM's own. A refused snippet that is self-contained and parses is a gap in the
guard's list; the others lean on Python around them (helper objects, f-strings, comprehensions).
"""
from __future__ import annotations

import argparse
import ast
import collections
import re
import sys
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from worker.script_guard import UnsafeScript, check_script, comment_imports  # noqa: E402

# Decorators that make a class or function TVMScript (the last dotted part, and the roots).
_ENTRY = {"ir_module", "prim_func", "function"}
_ROOTS = {"I", "T", "R", "tvm", "tir", "relax", "ir"}
_DECORATOR_LINE = re.compile(r"^\s*@(I|T|R|tvm\.script|tir|relax)\.[\w.]*"
                             r"(ir_module|prim_func|function)\b")


def _dotted(node) -> list:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def _is_entry(deco) -> bool:
    d = _dotted(deco.func if isinstance(deco, ast.Call) else deco)
    return len(d) >= 2 and d[0] in _ROOTS and d[-1] in _ENTRY


def _snippets_of_code(text: str):
    """(first line, source) of each outermost TVMScript class/function in Python source."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return
    lines = text.splitlines()
    todo = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and \
                any(_is_entry(d) for d in node.decorator_list):
            first = min(d.lineno for d in node.decorator_list)
            yield first, textwrap.dedent("\n".join(lines[first - 1:node.end_lineno])) + "\n"
            continue
        todo.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))


def _docstrings(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=True)
            if doc and any(_DECORATOR_LINE.match(ln) for ln in doc.splitlines()):
                yield (node.body[0].lineno if getattr(node, "body", None) else 1), doc


def _snippets_of_docstring(doc: str):
    """Code examples in a docstring: from each decorator line, the lines indented deeper
    (blank lines included), then the same cut as for code. Doctest prompts are stripped."""
    lines = [re.sub(r"^(\s*)(>>> |\.\.\. )", r"\1", ln) for ln in doc.splitlines()]
    i = 0
    while i < len(lines):
        if not _DECORATOR_LINE.match(lines[i]):
            i += 1
            continue
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while j < len(lines) and lines[j].lstrip().startswith("@") and \
                len(lines[j]) - len(lines[j].lstrip()) == indent:
            j += 1                           # stacked decorators
        j += 1                               # the def / class line
        while j < len(lines) and (not lines[j].strip()
                                  or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        block = textwrap.dedent("\n".join(lines[i:j])).rstrip() + "\n"
        yield i, block
        i = j


def snippets(path: Path):
    """(where, kind, text) for each TVMScript snippet in one .py file."""
    try:
        text = path.read_text()
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return
    for line, src in _snippets_of_code(text):
        yield f"{path}:{line}", "code", src
    for line, doc in _docstrings(tree):
        for k, (off, src) in enumerate(_snippets_of_docstring(doc)):
            try:
                ast.parse(src)
            except SyntaxError:
                yield f"{path}:{line}+{off}", "docstring", None    # not Python on its own
                continue
            yield f"{path}:{line}+{off}", "docstring", src


_NEVER_FREE = {"I", "R", "T", "tvm", "TypeVar", "metadata"} | {
    "range", "len", "min", "max", "int", "float", "bool", "str", "tuple", "list"}


def free_names(src: str) -> set:
    """Names the snippet reads but never binds: closure variables of the file it came from."""
    tree = ast.parse(src)
    bound, read = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, ast.Name):
            (read if isinstance(n.ctx, ast.Load) else bound).add(n.id)
    return read - bound - _NEVER_FREE


def parses(src: str) -> bool:
    """Whether TVM parses the snippet (in this process: only for TVM's own, trusted files)."""
    import tvm

    try:
        tvm.script.from_source(comment_imports(src))
        return True
    except Exception:  # noqa: BLE001 - any failure to parse counts
        return False


def judge(src: str) -> str:
    """'' when the guard accepts ``src``, else its reason with line numbers dropped."""
    try:
        check_script(comment_imports(src))
    except UnsafeScript as e:
        return re.sub(r"^line \d+: ", "", str(e))
    except SyntaxError as e:
        return f"SyntaxError: {e.msg}"
    return ""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", default=None,
                    help="directory of .py files (default: the installed TVM package)")
    ap.add_argument("--show", type=int, default=40, help="refusal groups to print")
    ap.add_argument("--dump", default=None, help="write each snippet under this directory")
    ap.add_argument("--parse", action="store_true",
                    help="also parse the accepted snippets with TVM, in this process: only for "
                         "trusted files such as TVM's own")
    a = ap.parse_args(argv)
    if a.dir is None:
        import importlib.util

        a.dir = str(Path(importlib.util.find_spec("tvm").origin).parent)
    root = Path(a.dir)
    counts = collections.Counter()      # (kind, accepted)
    extra = collections.Counter()       # accepted ones: self-contained or not, parsed
    gaps = []                           # refused, yet self-contained and TVM parses them
    reasons = collections.defaultdict(list)
    unparsable = n = 0
    for path in sorted(root.rglob("*.py")):
        for where, kind, src in snippets(path):
            if src is None:
                unparsable += 1
                continue
            n += 1
            if a.dump:
                out = Path(a.dump) / f"{n:05d}.py"
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(f"# {where}\n" + src)
            why = judge(src)
            counts[(kind, not why)] += 1
            if why:
                reasons[why].append(where.replace(str(root) + "/", ""))
                if not free_names(src):
                    extra["refused closed"] += 1
                    if a.parse and parses(src):
                        gaps.append((where.replace(str(root) + "/", ""), why))
                continue
            free = free_names(src)
            extra["free" if free else "closed"] += 1
            if a.parse:
                extra[("parsed", bool(free))] += parses(src)
    total = sum(counts.values())
    ok = counts[("code", True)] + counts[("docstring", True)]
    print(f"scanned {root}")
    print(f"snippets: {total} ({counts[('code', True)] + counts[('code', False)]} in code, "
          f"{counts[('docstring', True)] + counts[('docstring', False)]} in docstrings; "
          f"{unparsable} docstring examples skipped as not Python on their own)")
    if total:
        print(f"accepted: {ok}/{total} ({100 * ok / total:.1f}%): "
              f"code {counts[('code', True)]}, docstrings {counts[('docstring', True)]}")
        print(f"  of them self-contained: {extra['closed']}; reading names the snippet does not "
              f"bind (closure variables of their file, which replay does not have): "
              f"{extra['free']}")
        if a.parse:
            print(f"  parsed by TVM: {extra[('parsed', False)]} of the self-contained, "
                  f"{extra[('parsed', True)]} of the others")
    print(f"refused: {total - ok} ({extra['refused closed']} of them self-contained), by reason:")
    for why, where in sorted(reasons.items(), key=lambda kv: -len(kv[1]))[:a.show]:
        print(f"  {len(where):4d}  {why}   e.g. {where[0]}")
    if len(reasons) > a.show:
        print(f"  ... {len(reasons) - a.show} more reasons")
    if a.parse:
        print(f"refused although self-contained and parsed by TVM: {len(gaps)}")
        for where, why in gaps:
            print(f"  {where}: {why}")


if __name__ == "__main__":
    main()
