"""Input from outside, checked before TVM runs: the one loader behind ``replay``, ``reduce``,
``report`` and ``bisect`` (and the check the Celery worker applies to what the broker hands it).

A file is a case (program-model JSON) or TVMScript. Whatever is wrong with it is one line
(``InputError``) before anything is parsed by TVM, built or written: a missing or unreadable
file, an empty file, binary data, JSON that is not a case, a case whose variants name a pass, a
pipeline, a target or a module to import that tvmfuzz does not know, text that is not Python,
Python outside TVMScript (``script_guard``), or TVMScript without a module or function in it.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Optional

from fuzz.model import Program

from .script_guard import comment_imports, user_script_problem
from .variants import DLIGHT_RULES

MAX_BYTES = 64 << 20   # larger input is refused rather than read into memory

# What a variant (worker/variants.py) may say, for a case from outside.
PIPELINES = {"relax": {"default", "target", "zero", "passes", "scheduled", "dlight"},
             "tir": {"tir", "call_tir"}}
TARGET_KINDS = {"llvm", "c", "cuda", "opencl", "webgpu"}
TARGET_KEYS = {"kind", "opt-level", "mcpu", "arch", "max_num_threads"}
EXEC_MODES = {"bytecode", "compiled"}
VARIANT_KEYS = {"target", "pipeline", "passes", "exec_mode", "extra_passes", "schedule_seed",
                "schedule_steps", "dlight"}
# Decorators that make a TVMScript module or function (with or without a call).
MODULE_DECORATORS = {("I", "ir_module"), ("R", "function"), ("T", "prim_func")}


class InputError(ValueError):
    """The input is refused; the message is one line for the user."""


def read_input(path: Path) -> tuple[str, Any]:
    """("case", Program) or ("script", TVMScript text with its imports commented out)."""
    if path.is_dir():
        raise InputError(f"{path} is a directory, not a case or a TVMScript file")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"{path} is larger than {MAX_BYTES >> 20} MiB")
        data = path.read_bytes()
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}")
    if b"\0" in data:
        raise InputError(f"{path} is binary data, not a case (JSON) or a TVMScript file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text, so neither a case (JSON) nor TVMScript")
    if not text.strip():
        raise InputError(f"{path} is empty: there is nothing to run")
    if path.suffix == ".json" or text.lstrip().startswith("{"):
        return "case", load_case(text, str(path))
    return "script", load_script(text, str(path))


def load_case(text: str, where: str) -> Program:
    try:
        prog = Program.loads(text)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"{where} is not a tvmfuzz case (program-model JSON): "
                         f"{str(e).splitlines()[0] if str(e) else type(e).__name__}")
    problem = case_problem(prog)
    if problem:
        raise InputError(f"{where} refused: {problem}; nothing in it was run")
    return prog


def load_script(text: str, where: str) -> str:
    text = comment_imports(text)   # TVMScript's parser binds I, R, T itself; imports are refused
    problem = user_script_problem(text, where)
    if problem:
        raise InputError(problem)
    if not _has_module(text):
        raise InputError(f"{where} is not TVMScript: it has no @I.ir_module class, "
                         "@R.function or @T.prim_func")
    return text


def _has_module(text: str) -> bool:
    for node in ast.parse(text).body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            for d in node.decorator_list:
                d = d.func if isinstance(d, ast.Call) else d
                if isinstance(d, ast.Attribute) and isinstance(d.value, ast.Name) \
                        and (d.value.id, d.attr) in MODULE_DECORATORS:
                    return True
                if isinstance(d, ast.Attribute) and ast.unparse(d) == "tvm.script.ir_module":
                    return True   # TVM's own tests' spelling, which the script guard allows
    return False


def _onnx_options_problem(options) -> Optional[str]:
    """An ONNX case's export and import options must be the ones tvmfuzz draws: known names,
    an opset tvmfuzz exports to, flags as booleans."""
    from fuzz.onnx_export import OPSETS, OnnxOptions

    if not isinstance(options, dict):
        return "its ONNX options (meta.onnx) are not an object"
    known = set(OnnxOptions().to_json())
    if set(options) - known:
        return f"its ONNX options have unknown fields {sorted(set(options) - known)}"
    if options.get("opset", OPSETS[-1]) not in OPSETS:
        return f"its ONNX opset {str(options.get('opset'))[:20]!r} is not one of {OPSETS}"
    if not all(isinstance(v, bool) for k, v in options.items() if k != "opset"):
        return "its ONNX options' flags are not booleans"
    return None


def _torch_options_problem(prog) -> Optional[str]:
    """A PyTorch case's options must be the ones tvmfuzz draws (known names, booleans), and
    its program's names and attributes plain enough to be written into the nn.Module's
    source (``fuzz.torch_export.source_problem``): the source runs in the sandbox."""
    from fuzz.torch_export import TorchOptions, source_problem

    options = prog.meta.get("torch")
    if not isinstance(options, dict):
        return "its PyTorch options (meta.torch) are not an object"
    known = set(TorchOptions().to_json())
    if set(options) - known:
        return f"its PyTorch options have unknown fields {sorted(set(options) - known)}"
    if not all(isinstance(v, bool) for v in options.values()):
        return "its PyTorch options' flags are not booleans"
    problem = source_problem(prog)
    return f"its program cannot be written as Python: {problem}" if problem else None


def case_problem(prog: Program) -> Optional[str]:
    """Why a case from outside (a file, the broker, a shared corpus) may not run, or None. Its
    variants are data that the sandbox turns into passes, pipelines and targets: only names
    tvmfuzz itself draws are allowed, and never a module to import."""
    from . import tir_passes
    from .variants import pass_problem

    if prog.ir == "seeded":   # its text is parsed in the sandbox: the script guard first
        for what, text in (("seed", prog.seed_text), ("mutant", prog.mutant)):
            problem = text is not None and user_script_problem(text, f"its {what}")
            if problem:
                return problem
    if prog.ir == "onnx":
        problem = _onnx_options_problem(prog.meta.get("onnx"))
        if problem:
            return problem
    if prog.ir == "torch":
        problem = _torch_options_problem(prog)
        if problem:
            return problem
    ir = "tir" if prog.ir == "tir" else "relax"
    known_passes = set(tir_passes.ALL_PASSES)
    variants = prog.meta.get("variants") or []
    if not isinstance(variants, list):
        return "its variants are not a list"
    for i, v in enumerate(variants):
        where = f"variant {i}"
        if not isinstance(v, dict):
            return f"{where} is not an object"
        if set(v) - VARIANT_KEYS:
            return f"{where} has unknown fields {sorted(set(v) - VARIANT_KEYS)}"
        if v.get("extra_passes"):
            return (f"{where} names modules to import (extra_passes: "
                    f"{', '.join(map(str, v['extra_passes']))}); "
                    "a case from a file, the broker or a corpus never imports code")
        target = v.get("target", {"kind": "llvm"})
        if not isinstance(target, dict) or set(target) - TARGET_KEYS \
                or target.get("kind", "llvm") not in TARGET_KINDS \
                or not all(isinstance(x, (str, int)) for x in target.values()):
            return f"{where} has a target tvmfuzz does not make: {str(target)[:120]}"
        if v.get("pipeline", "default") not in PIPELINES[ir]:
            return f"{where} names an unknown pipeline {str(v.get('pipeline'))[:60]!r}"
        passes = v.get("passes", [])
        if not isinstance(passes, list) or not all(isinstance(p, str) for p in passes):
            return f"{where}'s passes are not a list of names"
        unknown = [p for p in passes if (p not in known_passes if ir == "tir"
                                          else pass_problem(p) is not None)]
        if unknown:
            return f"{where} names passes that are not on tvmfuzz's list: {unknown[:5]}"
        if v.get("exec_mode", "bytecode") not in EXEC_MODES:
            return f"{where} names an unknown exec mode {str(v.get('exec_mode'))[:40]!r}"
        seed = v.get("schedule_seed")
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
            return f"{where}'s schedule seed is not an integer"
        rules = v.get("dlight")
        if rules is not None and not (isinstance(rules, list) and rules
                                      and all(r in DLIGHT_RULES for r in rules)):
            return f"{where}'s dlight rules are not a list of dlight's GPU rules"
        steps = v.get("schedule_steps")
        if steps is not None and not (isinstance(steps, list) and all(
                isinstance(st, dict) and isinstance(st.get("prim"), str)
                and isinstance(st.get("func"), str) for st in steps)):
            return f"{where}'s schedule steps are not a list of recorded steps"
    return None
