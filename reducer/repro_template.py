# This file is the template of the repro.py that ``tvmfuzz reduce`` and ``tvmfuzz report``
# write for a Relax finding; reducer/repro.py fills in SCRIPT, CASE and the worker's own code
# (SHARED: how a variant is built, the pass watch, the schedule replay, the inputs, the round
# trip check). It must run with only TVM and numpy installed (no tvmfuzz), so it imports
# nothing from this repository.
#!/usr/bin/env python3
"""__TITLE__

Found by tvmfuzz; reduced reproducer. Needs only:
    pip install __PIP__
Run:
    python repro.py
Exit status: 1 when the bug reproduces, 0 when the module builds and runs cleanly (the bug
is fixed), 2 when it fails in another way (a different bug, or a changed message).
"""
from __future__ import annotations

import base64
import functools
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import traceback
import zlib


def _own_trouble(etype, value, tb):
    """An exception nobody caught is this script's own trouble (a TVM it cannot load, an API
    it does not know), never the bug: Python's exit status 1 would read as REPRODUCED."""
    traceback.print_exception(etype, value, tb)
    print("could not run the reproducer (not the bug): exit 2", flush=True)
    sys.stderr.flush()
    os._exit(2)


sys.excepthook = _own_trouble

SCRIPT = __SCRIPT__

# How the finding built and ran the module, and what it saw.
CASE = json.loads(__CASE__)

__SHARED__

# --- the reproducer ---------------------------------------------------------------------------
def normalize(msg):
    """The first message line without numbers, addresses and generated names."""
    line = first_message_line((msg or "").strip())   # the worker's own choice of line
    # a list of names printed from a set comes in the hash's order
    line = re.sub(r"\[('[^'\]]*'(?:, '[^'\]]*')+)\]",
                  lambda m: "[" + ", ".join(sorted(m.group(1).split(", "))) + "]", line)
    line = re.sub(r'(?:ir\.)?Op\(span=.*?name="([^"]+)".*?\)(?=\W|$)', r"Op(\1)", line)
    line = re.sub(r"\b0x[0-9a-fA-F]+\b", "0x?", line)
    line = re.sub(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])", "N", line)
    line = re.sub(r"\b([A-Za-z_]+?)_?\d+\b", r"\1#", line)
    return re.sub(r"\s+", " ", line).strip()[:160]


def unpack(blob):
    """Arrays packed as base64 of a zlib-compressed .npz, in order ("dtypes" names each
    array's dtype: bfloat16 and float8 are stored as their bits)."""
    import numpy as np

    data = np.load(io.BytesIO(zlib.decompress(base64.b64decode(blob))))
    out = []
    for i, name in enumerate(data["dtypes"]):
        a = data[f"arr_{i}"]
        if str(a.dtype) != str(name):
            import ml_dtypes

            a = a.view(getattr(ml_dtypes, str(name)))
        out.append(a)
    return out


def load_module(near_valid):
    """The module the finding built: parsed from SCRIPT, or, where TVM's printer does not give
    that module back exactly, loaded from TVM's own JSON of it (SCRIPT is then its printout),
    or, where constructing it is what fails, constructed by SCRIPT's Python."""
    import tvm

    if CASE.get("builder"):
        # TVM fails while this module is constructed, so it has no printout: SCRIPT is its
        # construction with relax.BlockBuilder, call by call (tvmfuzz wrote it).
        scope = {}
        exec(compile(SCRIPT, "reduced_module.py", "exec"), scope)
        return scope["build_module"]()
    if CASE.get("module"):
        return tvm.ir.load_json(zlib.decompress(base64.b64decode(CASE["module"])).decode())
    # A near-valid module is ill-formed on purpose: the parser must not refuse it.
    return tvm.script.from_source(SCRIPT, check_well_formed=not near_valid)


ONNX = {}   # an ONNX finding: onnxruntime's outputs and the values by name (load_onnx)


def load_onnx():
    """An ONNX finding: SCRIPT builds the model with onnx.helper; onnxruntime runs it on the
    finding's inputs (its outputs are the reference); TVM's frontend imports it with the
    finding's options. An import error is raised to the caller."""
    import warnings

    import numpy as np
    import onnxruntime as ort
    from onnx import numpy_helper
    from tvm.relax.frontend.onnx import from_onnx

    scope = {}
    exec(compile(SCRIPT, "onnx_model.py", "exec"), scope)
    model = scope["build_model"]()
    feeds = dict(zip(CASE["onnx"]["feeds"], unpack(CASE["inputs"]["data"])))
    ort.set_default_logger_severity(4)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ONNX["expected"] = [np.asarray(x) for x in sess.run(None, feeds)]
    ONNX["by_name"] = {**{t.name: numpy_helper.to_array(t) for t in model.graph.initializer},
                       **feeds}
    ONNX["dims"] = {d.dim_param: int(feeds[vi.name].shape[j])
                    for vi in model.graph.input if vi.name in feeds
                    for j, d in enumerate(vi.type.tensor_type.shape.dim) if d.dim_param}
    options = CASE["onnx"]["options"]
    shape_dict = ({k: list(v.shape) for k, v in feeds.items()}
                  if options.get("shape_dict") else None)
    print(f"importing with from_onnx (opset {options.get('opset')}, keep_params_in_input="
          f"{bool(options.get('keep_params_in_input'))}, shape_dict={shape_dict})", flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_onnx(model, shape_dict=shape_dict,
                         keep_params_in_input=bool(options.get("keep_params_in_input")))


TORCH = {}   # a PyTorch finding: eager PyTorch's outputs and the inputs by name (load_torch)


def load_torch():
    """A PyTorch finding: SCRIPT defines the torch.nn.Module (Model) and the dims exported
    as dynamic (DYNAMIC); eager PyTorch runs it on the finding's inputs (its outputs are the
    reference); torch.export exports it (then run_decompositions() where the finding did) and
    TVM's from_exported_program imports it with the finding's flags. An import error is raised
    to the caller."""
    import warnings

    import torch
    from tvm.relax.frontend.torch import from_exported_program

    scope = {}
    exec(compile(SCRIPT, "torch_model.py", "exec"), scope)
    model = scope["Model"]().eval()
    names = CASE["torch"]["inputs"]
    arrays = unpack(CASE["inputs"]["data"])
    args = tuple(to_torch(a) for a in arrays)
    torch.set_num_threads(1)
    with torch.no_grad():
        TORCH["expected"] = [to_numpy(t) for t in model(*args)]
    TORCH["by_name"] = dict(zip(names, arrays))
    options = CASE["torch"]["options"]
    print(f"exporting with torch.export (dynamic dims {scope.get('DYNAMIC') or {}}, "
          f"run_decompositions: {bool(options.get('decompose'))})", flush=True)
    ep = export_program(model, args, names, scope.get("DYNAMIC") or {},
                        bool(options.get("decompose")))
    flags = {k: bool(options.get(k)) for k in ("keep_params_as_input",
                                               "unwrap_unit_return_tuple",
                                               "no_bind_return_tuple", "run_ep_decomposition")}
    print(f"importing with from_exported_program({', '.join(f'{k}={v}' for k, v in flags.items())})",
          flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_exported_program(ep, **flags)


def torch_dim_value(d):
    """A dim of the imported module's type: a number or a symbolic variable of main's
    parameters, bound by the inputs' dims; None otherwise."""
    if hasattr(d, "value"):
        return int(d.value)
    return TORCH["dims"].get(str(d))


def onnx_dim_value(d):
    """A dim of the imported module's type: a number, a symbolic variable named after the
    ONNX input's dim_param, or None (another expression)."""
    if hasattr(d, "value"):
        return int(d.value)
    return ONNX["dims"].get(str(d))


def make_inputs(mod):
    if CASE.get("onnx"):   # main's parameters by name: graph inputs, initializers kept
        names = [getattr(p, "name", None) or p.name_hint for p in mod["main"].params]
        return [ONNX["by_name"][n] for n in names]
    if CASE.get("torch"):   # main's user inputs by name, then the weights it kept
        return main_inputs(mod, TORCH["by_name"])
    spec = CASE["inputs"]
    if spec["how"] == "arrays":      # the finding's own inputs
        return unpack(spec["data"])
    # A TVMScript file: from the parameters' types, as tvmfuzz made them (input_values).
    return input_values(mod[entry_of(mod)], spec.get("seed", 0), spec.get("by_name") or None)


def entry_of(mod):
    """The Relax function tvmfuzz ran: the one named with --entry, else main, else the
    module's only public Relax function (entry_function, tvmfuzz's own code)."""
    if CASE.get("builder") or CASE["inputs"]["how"] == "arrays":
        return CASE.get("entry") or "main"   # a case tvmfuzz generated: its entry is main
    return entry_function(mod, CASE.get("entry"))


def flat(x):
    """A result as flat numpy arrays, read as tvmfuzz reads it (output_arrays)."""
    return output_arrays(x)


def differs(expected, actual, tol):
    import numpy as np

    if len(expected) != len(actual):
        return f"{len(actual)} outputs, expected {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e.shape != a.shape:
            return f"output {i}: shape {a.shape}, expected {e.shape}"
        dt = "bfloat16" if "bfloat16" in str(e.dtype) else str(e.dtype)
        if dt in tol:
            ok = np.isclose(a.astype(np.float64), e.astype(np.float64), rtol=tol[dt][0],
                            atol=tol[dt][1], equal_nan=True)
        else:
            ok = e == a
        if not np.all(ok):
            return f"output {i} ({dt}): {int((~ok).sum())}/{ok.size} values differ"
    return ""


def type_problem(rule, got):
    """What of TVM's inferred type ``got`` contradicts ``rule`` (the type numpy's semantics
    give, in tvmfuzz's JSON form); "" when nothing does. The same wording as tvmfuzz's
    fuzz.materialize.type_disagreement, so the messages compare equal."""
    import tvm

    if rule["kind"] == "tuple" or not hasattr(got, "dtype"):
        fields = getattr(got, "fields", None)
        if rule["kind"] != "tuple" or fields is None:
            return f"type: TVM {got}, numpy {rule}"
        if len(fields) != len(rule["fields"]):
            return f"tuple size: TVM {len(fields)}, numpy {len(rule['fields'])}"
        for i, (r, g) in enumerate(zip(rule["fields"], fields)):
            problem = type_problem(r, g)
            if problem:
                return f"{problem} (tuple field {i})"
        return ""
    dtype = "" if got.dtype is None else str(got.dtype)
    if rule["dtype"] and dtype and rule["dtype"] != dtype:
        return f"dtype: TVM {dtype}, numpy {rule['dtype']}"
    if rule["ndim"] >= 0 and got.ndim >= 0 and rule["ndim"] != got.ndim:
        return f"rank: TVM {got.ndim}, numpy {rule['ndim']}"
    dims = got.shape.values if got.shape is not None else []
    for i, (a, b) in enumerate(zip(rule["shape"] or [], dims)):
        if isinstance(a, int) and isinstance(b, tvm.tirx.IntImm) and a != int(b.value):
            b = int(b.value)
            return f"extent of dim {i}: TVM {b}{' (negative)' if b < 0 else ''}, numpy {a}"
    return ""


def inferred_type_problem(mod):
    """A shape-inference finding: the type TVM infers for the named binding's value against
    the one numpy's semantics give."""
    want = CASE["expect_type"]
    for block in mod[want["func"]].body.blocks:
        for b in block.bindings:
            if b.var.name == want["binding"]:
                problem = type_problem(want["type"], b.value.ty)
                if problem:
                    return ("materialize", "InferenceMismatch",
                            f"{want['op']} infers the wrong {problem}", "")
                return None
    return ("parse", "", f"no binding {want['binding']} in the module", "")


def attempt():
    """Load, verify, build each variant, run, compare, as tvmfuzz did: (stage, error type,
    message, where) of the first failure, or None."""
    import tvm
    from tvm import relax

    near_valid = CASE.get("near_valid", False)
    if CASE.get("torch"):
        try:
            mod = load_torch()
        except Exception as e:
            traceback.print_exc()
            return ("import", type(e).__name__, str(e), "")
        ret = getattr(mod["main"], "ret_ty", None) or mod["main"].ret_struct_info
        TORCH["dims"] = torch_dims(mod, main_inputs(mod, TORCH["by_name"]))
        problem = output_type_problem(ret, TORCH["expected"], torch_dim_value, "eager PyTorch")
        if problem:
            return ("import", "", problem, "")
    elif CASE.get("onnx"):
        try:
            mod = load_onnx()
        except Exception as e:
            traceback.print_exc()
            return ("import", type(e).__name__, str(e), "")
        ret = getattr(mod["main"], "ret_ty", None) or mod["main"].ret_struct_info
        problem = output_type_problem(ret, ONNX["expected"], onnx_dim_value)
        if problem:
            return ("import", "", problem, "")
    try:
        mod = mod if CASE.get("onnx") or CASE.get("torch") else load_module(near_valid)
    except Exception as e:
        if CASE.get("builder"):
            traceback.print_exc()
            return ("materialize", type(e).__name__, str(e), "")
        if CASE.get("kind") == "roundtrip":
            # SCRIPT is what TVM's printer wrote for the module: not parsing back is the bug.
            traceback.print_exc()
            return ("roundtrip", type(e).__name__,
                    "printed module does not parse: " + (str(e).strip().splitlines() or [""])[0],
                    "")
        return ("parse", type(e).__name__, str(e), "")
    if CASE.get("expect_type"):
        return inferred_type_problem(mod)
    try:
        wf = relax.analysis.well_formed(mod) is not False
    except Exception as e:
        if not near_valid:
            return ("well_formed", type(e).__name__, str(e), "")
        wf = False
    if not wf and not near_valid:
        return ("well_formed", "", "the verifier rejects the module", "")
    args = None   # made once a variant built: a build failure needs no inputs
    first = None
    with tempfile.TemporaryDirectory() as workdir:
        for v in CASE["variants"]:
            watch = pass_watch(wf)
            schedule = None
            if v.get("pipeline") == "scheduled":
                if v.get("schedule_trace") is None:
                    return ("no_schedule", "", "the schedule tvmfuzz applied is not in this file: "
                            + v.get("schedule_missing", "it could not be traced"), "")
                print("replaying the schedule tvmfuzz applied:", flush=True)
                for step in v["schedule_trace"]:
                    print(f"  # {step['func']}\n  " + "\n  ".join(step["trace"]), flush=True)
                schedule = functools.partial(replay_traces, traces=v["schedule_trace"])
            shown = {k: x for k, x in v.items() if k != "schedule_trace"}
            print(f"building for {json.dumps(shown)}", flush=True)
            try:
                with tvm.transform.PassContext(instruments=[watch]):
                    ex = build_for(mod, v, schedule)
                    nvcc_for(ex, v)   # CUDA: compile-only with nvcc, as tvmfuzz did
            except Exception as e:
                traceback.print_exc()
                if not wf:
                    return None   # verifier and build agree the module is wrong
                if watch.ill_formed_after:   # a pass broke the IR first: that is the finding
                    return ("build", "", watch.ill_formed_message(), watch.ill_formed_after)
                # Raised inside tvmfuzz's own schedule step: the stage tvmfuzz calls schedule.
                return ("schedule" if watch.current == SCHEDULE_PASS else "build",
                        type(e).__name__, str(e), watch.ill_formed_after or watch.phase)
            if watch.ill_formed_after:
                return ("build", "", watch.ill_formed_message(),
                        watch.ill_formed_after)
            if watch.host_code:   # a GPU PrimFunc with no thread: built as host code
                return ("build", "", host_code_message(watch.host_code), "tirx.SplitHostDevice")
            if watch.overlaps:   # a tensor planned into storage a live tensor still uses
                print("StaticPlanBlockMemory planned:\n" + overlap_detail(watch.overlaps)
                      + "\n\n" + watch.planned, flush=True)
                return ("build", "", overlap_message(watch.overlaps), "StaticPlanBlockMemory")
            if not runnable_here(v):
                continue   # compile-only, as tvmfuzz did: no GPU, or code for another CPU
            if args is None:
                try:
                    args = make_inputs(mod)
                except NoInputs as e:
                    return ("inputs", "NoInputs", str(e), "")
            try:
                vm = vm_for(ex, v, workdir)
                dev = tvm.cuda(0) if v["target"].get("kind") == "cuda" else tvm.cpu()
                vm_args = vm_arguments(args, lambda a: tvm.runtime.tensor(a, dev))
            except Exception as e:
                traceback.print_exc()
                return ("vm_load", type(e).__name__, str(e), "")
            try:
                out = flat(vm[entry_of(mod)](*vm_args))
            except Exception as e:
                traceback.print_exc()
                return ("run", type(e).__name__, str(e), "")
            if not wf:
                return ("well_formed", "", "ill-formed module builds and runs", "")
            exact = not v.get("inexact")
            if (CASE.get("expected") or CASE.get("onnx") or CASE.get("torch")) and exact:
                want_out = (ONNX["expected"] if CASE.get("onnx") else TORCH["expected"]
                            if CASE.get("torch") else unpack(CASE["expected"]))
                diff = differs(want_out, out, CASE["tol"])
                if diff:
                    return ("compare", "", diff, "")
            elif first is not None and exact and first[1] and CASE.get("kind") == "numeric":
                diff = differs(first[0], out, CASE["tol"])
                if diff:
                    return ("compare", "", "differs from the first build: " + diff, "")
            first = first if first is not None else (out, exact)
    if CASE.get("kind") == "roundtrip" and wf:
        problem = roundtrip_problem(mod, second_generation=near_valid)
        if problem:
            print(problem[2])
            return ("roundtrip", problem[0], problem[1], "")
    return None


def main():
    want = CASE["expect"]
    if CASE.get("kind") in ("signal", "hang", "oom") and "--child" not in sys.argv:
        # The bug kills the process (signal, hang, memory): watch it from outside. Memory
        # damage ends by SIGSEGV one run, by glibc's SIGABRT the next, and now and then by a
        # deadlock in the allocator: a death by signal gets three tries.
        for _ in range(3 if CASE["kind"] == "signal" else 1):
            try:
                r = subprocess.run([sys.executable, __file__, "--child"],
                                   timeout=CASE["timeout"])
                break
            except subprocess.TimeoutExpired:
                if CASE["kind"] == "hang":
                    print("BUG REPRODUCED: no result within", CASE["timeout"], "s")
                    return 1
                print("no result within", CASE["timeout"], "s: trying again")
        else:
            return 2
        memory = ("SIGSEGV", "SIGABRT", "SIGBUS")
        if r.returncode < 0:
            name = signal.Signals(-r.returncode).name if -r.returncode in \
                signal.valid_signals() else f"signal {-r.returncode}"
            if CASE["kind"] == "signal" and want.get("error_type") not in ("", name) and not (
                    name in memory and want.get("error_type") in memory):
                print(f"the process died by {name}, not by {want['error_type']} as the "
                      "finding did: a different failure")
                return 2
            print(f"BUG REPRODUCED: the process died by {name}")
            return 1
        return r.returncode
    try:
        got = attempt()
    except Exception as e:   # this script's own trouble: say it in one line
        first = (str(e).strip().splitlines() or [""])[0]
        print(f"could not reproduce: {type(e).__name__}: {first}")
        return 2
    if got is None:
        print("no failure: the module builds, runs and agrees; the bug does not reproduce")
        return 0
    stage, etype, msg, where = got
    if stage in ("inputs", "no_schedule"):
        print(f"cannot run the module: {(msg.strip().splitlines() or [''])[0]}")
        return 2
    print(f"\nfailed at stage {stage}: {etype + ': ' if etype else ''}{msg.strip()[:2000]}")
    if where == "codegen":
        print("after the last pass finished (code generation)")
    elif where:
        print(f"during {'tvmfuzz step' if where.startswith('tvmfuzz.') else 'pass'}: {where}")
    # An exception is the same when its type and normalized first line are; a verdict
    # without one (verifier disagreement, wrong numbers) when the stage is.
    same = (stage == want["stage"] and etype == want["error_type"]
            and (not etype or normalize(msg) == normalize(want["message"])))
    if CASE.get("kind") == "oom" and (etype == "MemoryError" or "bad_alloc" in msg):
        # tvmfuzz's sandbox caps a case's memory (RLIMIT_AS) and saw it run out; without the
        # cap the same allocation fails as C++'s std::bad_alloc (or Python's MemoryError).
        print("an allocation failed: the finding ran out of memory under tvmfuzz's limit")
        same = True
    if same:
        print("BUG REPRODUCED:", want["signature"])
        return 1
    print("a different failure than the one reported:", want["signature"])
    return 2


if __name__ == "__main__":
    sys.exit(main())
