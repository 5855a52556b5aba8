"""The kinds of case tvmfuzz judges, behind one interface, and the one sandbox job that judges
any of them.

A case is a value of one kind:

| kind | value | judged by |
|---|---|---|
| ``relax`` | a Relax program model (``fuzz.model.Program``, ``ir == "relax"``) | ``worker.execute.compile_and_run`` |
| ``tir`` | a TIR PrimFunc model (``fuzz.tir.model.TirProgram``) | ``worker.tir_execute.run_tir_case`` |
| ``tvmscript`` | TVMScript text: a user's module, a reducer's candidate | ``worker.script_judge.judge_script`` |
| ``seeded`` | a TVMScript seed and its mutation (``fuzz.seeded.SeededCase``) | ``worker.seed_mutate.judge_seeded`` |
| ``onnx`` | a Relax program model exported to ONNX with its opset and import options (``fuzz.model.OnnxProgram``) | ``worker.onnx_judge.judge_onnx`` |
| ``torch`` | a Relax program model written as a ``torch.nn.Module`` with its export and import options (``fuzz.model.TorchProgram``) | ``worker.torch_judge.judge_torch`` |

Relax models, text, ONNX and PyTorch models share one judging loop
(``worker.execute.judge_module``); they differ only in how the module is made (materialized,
parsed, imported by TVM's ONNX or PyTorch frontend) and what gives the inputs and the reference
(numpy, none, onnxruntime, eager PyTorch). TIR cases have
their own stages (a schedule before the variants, ``tvm.tirx.build``).

Every consumer (campaign, smoke, Celery workers, replay, the reducer's oracle, bisect) builds
its sandbox job with ``job(value, ...)`` and every sandbox child judges with ``judge(job)``:
one way in, one way out, so a case is judged the same whoever asks. A new kind of case (an
ONNX model, a PyTorch program) is one more ``CaseKind`` here and one line in ``KINDS``.

The job is plain JSON: ``{"kind": "case", "program": ...}`` for a model,
``{"kind": "script", "text": ...}`` for text, with the judging options beside them
(``variants``, ``input_seed``, ``near_valid``, ``inputs_by_name``, ``target``, and for text
``entry``: the Relax function to run, by default ``main``, else the module's only public one). Building a job
imports no TVM; judging happens in the child only.
"""
from __future__ import annotations

from typing import Any, Optional

from fuzz.model import Program
from fuzz.outcome import Outcome


class CaseKind:
    """One kind of case. ``name`` is the kind, ``job_kind`` the sandbox job's ``kind``,
    ``file_name`` what a reduction or a saved finding stores it as."""

    name = job_kind = file_name = ""

    def accepts(self, value: Any) -> bool:
        raise NotImplementedError

    def text(self, value: Any) -> str:
        """The case as canonical text: what is hashed, saved and compared."""
        raise NotImplementedError

    def job(self, value: Any, variants: Optional[list] = None, input_seed: Optional[int] = None,
            near_valid: bool = False, by_name: Optional[dict] = None,
            entry: Optional[str] = None) -> dict:
        """``entry``: the function to run, for kinds whose value does not say (TVMScript);
        a model names its own (``Program.entry``), and another name is refused."""
        raise NotImplementedError

    def judge(self, job: dict) -> Outcome:
        """Judge the job's case (sandbox child only)."""
        raise NotImplementedError


class _ModelCase(CaseKind):
    job_kind, file_name, ir = "case", "case.json", ""

    def accepts(self, value: Any) -> bool:
        return not isinstance(value, str) and getattr(value, "ir", None) == self.ir

    def text(self, value) -> str:
        return value.dumps()

    def job(self, value, variants: Optional[list] = None,
            input_seed: Optional[int] = None, near_valid: bool = False,
            by_name: Optional[dict] = None, entry: Optional[str] = None) -> dict:
        if entry and entry != value.entry:
            raise ValueError(f"the case's entry function is {value.entry}, not {entry}")
        # The variants travel in the case (meta["variants"]), so a replay builds it the same
        # way; ``variants`` here overrides them (bisect, a reducer's fixed variants).
        job = {"kind": self.job_kind, "program": value.to_json(),
               "input_seed": (value.meta.get("seed") or 0) if input_seed is None else input_seed}
        if variants is not None:
            job["variants"] = variants
        return job

    @staticmethod
    def _program(job: dict):
        return Program.from_json(job["program"])   # a TirProgram for a TIR case

    @staticmethod
    def _variants(job: dict, prog) -> Optional[list]:
        return job.get("variants") or prog.meta.get("variants")

    def judge(self, job: dict) -> Outcome:
        prog = self._program(job)
        return self._judge_program()(prog, variants=self._variants(job, prog),
                                     input_seed=job.get("input_seed", 0))

    @staticmethod
    def _judge_program():
        """The kind's judge of a program model (imported in the child only)."""
        raise NotImplementedError


class RelaxCase(_ModelCase):
    name, ir = "relax", "relax"

    @staticmethod
    def _judge_program():
        from .execute import compile_and_run

        return compile_and_run


class TirCase(_ModelCase):
    name, ir = "tir", "tir"

    @staticmethod
    def _judge_program():
        from .tir_execute import run_tir_case

        return run_tir_case


class OnnxCase(_ModelCase):
    """A program model written as ONNX (``fuzz.onnx_export``) and imported by TVM; the job
    is the model case's (the options travel in the case, ``meta["onnx"]``)."""

    name, ir = "onnx", "onnx"

    @staticmethod
    def _judge_program():
        from .onnx_judge import judge_onnx

        return judge_onnx


class TorchCase(_ModelCase):
    """A program model written as a ``torch.nn.Module`` (``fuzz.torch_export``), exported with
    ``torch.export`` and imported by TVM; the job is the model case's (the options travel in
    the case, ``meta["torch"]``)."""

    name, ir = "torch", "torch"

    @staticmethod
    def _judge_program():
        from .torch_judge import judge_torch

        return judge_torch


class ScriptCase(CaseKind):
    """TVMScript text. The script guard checks it before it is sent (``job`` refuses unsafe
    text with ``UnsafeScript``) and again in the child before TVM parses it."""

    name, job_kind, file_name = "tvmscript", "script", "case.py"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str)

    def text(self, value: str) -> str:
        return value

    def job(self, value: str, variants: Optional[list] = None, input_seed: Optional[int] = None,
            near_valid: bool = False, by_name: Optional[dict] = None,
            entry: Optional[str] = None) -> dict:
        from .script_guard import check_script

        check_script(value)   # never send text that could run code on parse
        job: dict = {"kind": self.job_kind, "text": value, "input_seed": input_seed or 0}
        if variants is not None:
            job["variants"] = variants
        if near_valid:
            job["near_valid"] = True
        if by_name:
            job["inputs_by_name"] = by_name
        if entry:
            job["entry"] = entry   # else main, or the module's only public Relax function
        return job

    def judge(self, job: dict) -> Outcome:
        from .script_guard import check_script
        from .script_judge import judge_script

        check_script(job["text"])
        variants = job.get("variants")
        if not variants:
            # One variant: the target asked for (a kind name or a target dict), default build.
            target = job.get("target", "llvm")
            variants = [{"target": dict(target) if isinstance(target, dict)
                         else {"kind": str(target)}}]
        return judge_script(job["text"], variants, job.get("input_seed", 0),
                            bool(job.get("near_valid")), job.get("inputs_by_name"),
                            job.get("entry"))


class SeededKind(_ModelCase):
    """A TVMScript seed mutated in the child (``worker.seed_mutate``), or the mutant a finding
    froze. Its text is checked by the script guard before it is sent and again in the child."""

    name, job_kind, ir = "seeded", "seeded", "seeded"

    def job(self, value, variants: Optional[list] = None, input_seed: Optional[int] = None,
            near_valid: bool = False, by_name: Optional[dict] = None,
            entry: Optional[str] = None) -> dict:
        from .script_guard import check_script

        if entry:
            raise ValueError("a seeded case runs its mutant's own function; --entry is for "
                             "TVMScript files")
        check_script(value.seed_text)   # never send text that could run code on parse
        if value.mutant is not None:
            check_script(value.mutant)
        return super().job(value, variants, input_seed)

    def judge(self, job: dict) -> Outcome:
        from .seed_mutate import judge_seeded

        case = self._program(job)
        return judge_seeded(case, self._variants(job, case) or [], job.get("input_seed", 0))


KINDS: tuple[CaseKind, ...] = (RelaxCase(), TirCase(), ScriptCase(), SeededKind(),
                                 OnnxCase(), TorchCase())


def kind_of(value: Any) -> CaseKind:
    """The kind of a case value."""
    for k in KINDS:
        if k.accepts(value):
            return k
    raise TypeError(f"not a case tvmfuzz can judge: {type(value).__name__}")


def kind_of_job(job: dict) -> CaseKind:
    """The kind of the case a judging job carries."""
    if job.get("kind") == "script":
        return KINDS[2]
    if job.get("kind") == "seeded":
        return KINDS[3]
    program_kind = (job.get("program") or {}).get("kind")
    return {"tir": KINDS[1], "onnx": KINDS[4], "torch": KINDS[5]}.get(program_kind, KINDS[0])


def job(value: Any, **opts) -> dict:
    """The sandbox job that judges ``value`` (see ``CaseKind.job`` for the options)."""
    return kind_of(value).job(value, **opts)


def judge(job: dict) -> Outcome:
    """Judge the case a job carries, in this process (the sandbox child)."""
    return kind_of_job(job).judge(job)
