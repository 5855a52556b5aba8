"""Crash signatures (one bucket per distinct failure) and bug keys (one bug per root cause).

A *signature* is kind + stage + exception class + the first message line, normalized so that
numbers, hex addresses, shapes, the names a program gives its values, buffers, loops and
symbolic variables, and IR access paths do not split one failure into many, + the C++ throw
site (``file:line`` under TVM's ``src/``) + the failing pass or schedule primitive where known.
What tells failures apart stays: ops (``Op(relax.exp)`` and qualified names such as
``relax.nn.conv2d``, ``tirx.asin``), dtypes, exception classes, pass names, the C++ check text
and the throw site. Signatures key the corpus's buckets.

A *bug key* (``bug_key``) groups signatures by root cause, in the spirit of ClusterFuzz's crash
state: kind + throw site without its line (the file; the stage when there is no C++ site) +
the check text (``Check failed: (cond)`` and the ops the message names) or, for other errors,
the exception class and message skeleton + the failing pass or schedule primitive (with one
error, primitives TVM implements with one body of code count as one: ``PRIMITIVE_FAMILY``).
The op is left out of the key of CodeGenVM's clear "cannot emit this Relax operator directly"
refusal: one behaviour whatever the op (shared/bug-classes.md, class 3). ``bug_id`` names a
bug.
"""
from __future__ import annotations

import dataclasses
import hashlib
import posixpath
import re
from typing import Any, Optional

# An outcome as the rules read it: an ``Outcome`` (fuzz/outcome.py, which derives its
# signature here, so this module does not import it) or its stored JSON dict.
OutcomeLike = Any

_DTYPE = (r"(?:bfloat16|float(?:8|16|32|64)|u?int(?:1|4|8|16|32|64)|bool|e[45]m[23]\w*)"
          r"(?:x\d+)?")
_OP_START = re.compile(r'(?:ir\.)?Op\((?=span=|name=)')
_OP_SHORT = re.compile(r"\bOp\(([\w.]+)\)")
_QUALIFIED = re.compile(r"\b(?:relax|tirx|tir|topi|s_tir|T|R|I)\.[\w.]+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUM = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")
_SPACES = re.compile(r"\s+")
# A list of quoted names printed from a set ("Unsupported function types ['b', 'a']"): its
# order is the hash's, so one bug would print two ways
_NAME_SET = re.compile(r"\[('[^'\]]*'(?:, '[^'\]]*')+)\]")
# Access paths name the function on 0.27 and not on 0.26: one bug, one signature on both.
_ROOT_FUNC = re.compile(r'<root>\.functions\[I\.GlobalVar\("[^"]*"\)\]')
_TENSOR_LOAD = re.compile(r"tensor_load\((?:[^()]|\([^()]*\))*\)")
# Messages that name the op only on a later line (CodeGenVM: "Offending call: R.exp(p1)").
_OFFENDING = re.compile(r"Offending call:\s*R\.([\w.]+)\(")
# CodeGenVM's documented refusal of an op no pass lowered (0.27): one behaviour, any op.
CODEGEN_REFUSAL = "cannot emit this Relax operator directly"

# Bumped whenever bug_key's definition changes: a corpus then recomputes its buckets' bug ids.
BUG_KEY_VERSION = 8
# What TVM puts before the CUDA compiler's first error (worker.execute.first_message_line):
# nvcc's, or NVRTC's where a GPU is present.
_CUDA_COMPILER_HEAD = re.compile(r"^(?:Compilation error:|NVRTC compilation failed:)")
# Relax's convolutions, whatever their rank and direction (one importer defect: bug_key).
_CONV_FAMILY = re.compile(r"^relax\.nn\.conv[123]d(?:_transpose)?$")

# --- names ---------------------------------------------------------------------------------
PLACEHOLDER = "$"
_IDENT = re.compile(r"(?<![\w.$])(?<!\w')[A-Za-z_]\w*(?![\w$])")   # not buffer's "s"
# An IR access path: <root>.a.b[3].c, or a relative one with an index and a field
# (params[0].ty.elem_offset); one bug reaches the same field by many paths.
_SEG = r"(?:\.[A-Za-z_]\w*|\[[^\[\]]*\])"
_ROOT_PATH = re.compile(rf"<root>{_SEG}*")
_REL_PATH = re.compile(rf"(?<![\w.$])[A-Za-z_]\w*{_SEG}*\[[^\[\]]*\]{_SEG}*\.[A-Za-z_]\w*")
_LAST_FIELD = re.compile(r"\.([A-Za-z_]\w*)(?:\[[^\[\]]*\])*$")
# A JSON object in a message (a target's configuration): its contents vary with the variant.
_JSON_OBJ = re.compile(r'\{"[^{}]*(?:\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}[^{}]*)*(?:\}|$)')
# Words after which a message names a buffer, variable, loop or block of the program.
_NAME_KW = re.compile(r"\b(buffers?|Buffer|variables?|[Vv]ars?|parameters?|params?|"
                      r"iter_vars?|loops?|extent|blocks?|Block|LHS|RHS|operands?|[Ii]nputs?|"
                      r"arguments?|args?|[Tt]ensors?)(\s+)([`'\"]?)([A-Za-z_]\w*)\3")
_NOT_NAMES = frozenset("""
    a an the is are was were be been being of in on at to with for from by and or not no as
    that which this these those it its has have had must should cannot can could does do did
    will may might only also when while after before into inside within than then if but so
    used defined declared bound binding binds type types dtype dtypes shape shapes ndim size
    index indices name names kind var vars variable variables buffer buffers loop loops block
    blocks param params parameter parameters extent extents region regions access accesses
    scope data realize iter iters axis axes value values expected expects got given mismatch
    field fields node nodes must requires required definition definitions declaration
    tensor tensors operand operands input inputs argument arguments arg args dimension
    dimensions length lengths element elements rank ranks
    """.split())
# Identifiers with digits that are vocabulary, not names: conv2d, log2, x86_64, sm_80,
# int32_t, CamelCase types (Conv2DAttrs).
_KEEP_DIGITS = re.compile(r"\w*\d[dD]\w*|log2|log10|log1p|exp2|expm1|atan2|x86_64|aarch64|"
                          r"sm_\d+|\w+\d+_t|[A-Z][a-z]+[A-Z0-9]\w*")
# Buffers and blocks that schedule primitives derive from another name (cache_read's
# A_local, rfactor's C_rf, decompose_reduction's C_init, ...) and TIR block iteration vars.
_DERIVED = re.compile(r"v_\w+|\w+_(?:local|global|shared|rf|init|pad|reindex)|[lg]v")
# The dims of a shape (R.shape([n, 4]), T.Buffer((seq_len, 8), ...), shape (n, 4)): symbolic
# variables are names.
_SHAPE_LIST = re.compile(r"((?:\bshape\s*|\bR\.shape\(|\bR\.Tensor\(|\bT\.Buffer\()[\[(])"
                         r"([^\[\]()]*)(?=[\])])")
_OPS_NAMED = re.compile(r"\bOp\([\w.]+\)|\b(?:relax|tirx|tir|topi)\.[\w.]+")
_ARG_LIST = re.compile(r"(?<=[(\[])\$(?:, \$)*(?=[)\]])")   # rank-dependent argument lists

# Relax ops TVM registers with one type-inference function (FInferType, src/relax/op/ in TVM
# 0.27), among the ops tvmfuzz generates; an op not listed has a function of its own.
# Constructing a module runs it on every call (BlockBuilder.emit normalizes the call): a death
# while one op of a family is emitted and while another is are one defect of that function
# (relax.nn.attention and relax.nn.attention_bias both read the shape of a tensor whose shape
# was erased, in InferTypeAttention). A bug key names the function; a signature the op.
INFERENCE_FAMILIES: dict[str, tuple[str, ...]] = {
    "InferTypeAttention (src/relax/op/nn/attention.cc)":
        ("relax.nn.attention", "relax.nn.attention_bias"),
    "InferTypeArgmaxArgmin (src/relax/op/tensor/search.cc)": ("relax.argmax", "relax.argmin"),
    "InferTypeBroadcastArith (src/relax/op/tensor/binary.cc)":
        ("relax.add", "relax.atan2", "relax.bitwise_and", "relax.bitwise_or", "relax.bitwise_xor",
         "relax.divide", "relax.floor_divide", "relax.floor_mod", "relax.left_shift",
         "relax.log_add_exp", "relax.logical_and", "relax.logical_or", "relax.logical_xor",
         "relax.maximum", "relax.minimum", "relax.mod", "relax.multiply", "relax.power",
         "relax.right_shift", "relax.subtract"),
    "InferTypeBroadcastCMP (src/relax/op/tensor/binary.cc)":
        ("relax.equal", "relax.greater", "relax.greater_equal", "relax.less", "relax.less_equal",
         "relax.not_equal"),
    "InferTypeOnesLikeZerosLike (src/relax/op/tensor/create.cc)":
        ("relax.ones_like", "relax.zeros_like"),
    "InferTypeOnesZeros (src/relax/op/tensor/create.cc)": ("relax.ones", "relax.zeros"),
    "InferTypeTrilTriu (src/relax/op/tensor/create.cc)": ("relax.tril", "relax.triu"),
    "InferTypePool1D (src/relax/op/nn/pooling.cc)": ("relax.nn.avg_pool1d", "relax.nn.max_pool1d"),
    "InferTypePool2D (src/relax/op/nn/pooling.cc)": ("relax.nn.avg_pool2d", "relax.nn.max_pool2d"),
    "InferTypePool3D (src/relax/op/nn/pooling.cc)": ("relax.nn.avg_pool3d", "relax.nn.max_pool3d"),
    "InferTypeScan (src/relax/op/tensor/statistical.cc)": ("relax.cumprod", "relax.cumsum"),
    "InferTypeStatistical (src/relax/op/tensor/statistical.cc)":
        ("relax.max", "relax.mean", "relax.min", "relax.prod", "relax.std", "relax.sum",
         "relax.variance"),
    "InferTypeSoftmax (src/relax/op/nn/nn.cc)": ("relax.nn.log_softmax", "relax.nn.softmax"),
    "InferTypeUnaryArith (src/relax/op/op_common.h)":
        ("relax.abs", "relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
         "relax.atanh", "relax.bitwise_not", "relax.ceil", "relax.cos", "relax.cosh", "relax.erf",
         "relax.exp", "relax.floor", "relax.log", "relax.logical_not", "relax.negative",
         "relax.round", "relax.rsqrt", "relax.sigmoid", "relax.sign", "relax.sin", "relax.sinh",
         "relax.sqrt", "relax.square", "relax.tan", "relax.tanh", "relax.trunc", "relax.nn.gelu",
         "relax.nn.gelu_tanh", "relax.nn.leakyrelu", "relax.nn.relu", "relax.nn.selu",
         "relax.nn.silu", "relax.nn.softplus"),
    "InferTypeUnaryCheck (src/relax/op/tensor/unary.cc)":
        ("relax.isfinite", "relax.isinf", "relax.isnan"),
}
_INFERENCE_OF = {op: fn for fn, ops in INFERENCE_FAMILIES.items() for op in ops}


def _is_name(tok: str, loose: bool) -> bool:
    """Whether ``tok`` is a program-chosen name. ``loose`` (outside C++ check text): also
    derived buffer names, block iteration variables and single letters other than "a"."""
    if re.search(r"\d", tok):
        return not _KEEP_DIGITS.fullmatch(tok)
    if not loose:
        return False
    return bool(_DERIVED.fullmatch(tok)) or (len(tok) == 1 and tok.islower() and tok != "a")


def _names(text: str, loose: bool) -> str:
    if loose:
        text = _NAME_KW.sub(lambda m: m.group(0) if m.group(4) in _NOT_NAMES
                            or re.match(r"[A-Z][a-z]+[A-Z]", m.group(4))
                            else f"{m.group(1)}{m.group(2)}{m.group(3)}{PLACEHOLDER}{m.group(3)}",
                            text)

    def one(m):
        tok = m.group(0)
        after = text[m.end():m.end() + 2]
        if len(tok) == 1 and after[:1] == "." and after[1:2].isalpha():   # e.g.
            return tok
        return PLACEHOLDER if _is_name(tok, loose) else tok

    return _IDENT.sub(one, text)


def _collapse_path(m) -> str:
    last = _LAST_FIELD.search(m.group(0))
    return "..." + (last.group(1) if last else "")


def check_condition(msg: str) -> tuple[int, int]:
    """The span of the C++ check's condition in ``msg`` (after "Check failed: "), or (-1, -1):
    ``(cond)`` up to its closing parenthesis, or a bare ``a == b`` up to " (" (the values),
    " : " or the end."""
    i = msg.find("Check failed: ")
    if i < 0:
        return -1, -1
    i += len("Check failed: ")
    if msg[i:i + 1] == "(":
        depth, j = 0, i
        while j < len(msg):
            depth += {"(": 1, ")": -1}.get(msg[j], 0)
            j += 1
            if depth == 0:
                return i, j
        return i, len(msg)
    ends = [k for k in (msg.find(" (", i), msg.find(" : ", i), msg.find(": ", i)) if k >= 0]
    return i, min(ends) if ends else len(msg)


def normalize_message(msg: str) -> str:
    line = (msg or "").strip().splitlines()[0] if (msg or "").strip() else ""
    line = _reduce_op_reprs(line)
    line = _NAME_SET.sub(lambda m: "[" + ", ".join(sorted(m.group(1).split(", "))) + "]", line)
    line = _ROOT_FUNC.sub("<root>", line)
    line = _TENSOR_LOAD.sub("tensor_load(...)", line)
    line = _JSON_OBJ.sub("{...}", line)
    line = _SHAPE_LIST.sub(lambda m: m.group(1) + re.sub(r"(?<![\w.])[A-Za-z_]\w*(?![\w.])",
                                                         PLACEHOLDER, m.group(2)), line)
    keep: list[str] = []

    def protect(m):   # a private-use character stands in, so nothing in it is rewritten
        keep.append(m.group(0) if isinstance(m, re.Match) else m)
        return chr(0xE000 + len(keep) - 1)

    line = _OP_SHORT.sub(protect, line)
    line = _QUALIFIED.sub(protect, line)
    line = re.sub(rf"\b{_DTYPE}\b", protect, line)
    line = _ROOT_PATH.sub(lambda m: protect(_collapse_path(m)), line)
    line = _REL_PATH.sub(lambda m: protect(_collapse_path(m)), line)
    line = _HEX.sub("0x?", line)
    # C++ check text is source code: only numbers and names with digits are rewritten there.
    a, b = check_condition(line)
    if a >= 0:
        cond = _NUM.sub("N", _names(line[a:b], loose=False))
        line = _names(line[:a], True) + protect(cond) + _names(line[b:], True)
    else:
        line = _names(line, True)
    line = _NUM.sub("N", line)
    line = _ARG_LIST.sub(PLACEHOLDER + "...", line)
    while re.search("[\ue000-\uf8ff]", line):   # protected spans may nest (a dtype in a cond)
        line = re.sub("[\ue000-\uf8ff]", lambda m: keep[ord(m.group(0)) - 0xE000], line)
    return _SPACES.sub(" ", line).strip()[:300]


def _reduce_op_reprs(line: str) -> str:
    """``ir.Op(span=None, ..., name="relax.divide", ...)`` -> ``Op(relax.divide)``, also when
    the first line ends inside the repr."""
    while (m := _OP_START.search(line)):
        depth, i = 1, m.end()
        while i < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[i], 0)
            i += 1
        name = re.search(r'name="([^"]+)"', line[m.end():i])
        line = line[:m.start()] + f"Op({name.group(1) if name else '?'})" + line[i:]
    return line


def outcome_fields(outcome: OutcomeLike) -> dict:
    """An outcome's fields by name, as the rules read them: an ``Outcome`` (fuzz/outcome.py,
    what travels in-process) or its stored JSON (``Outcome.to_json()`` form: a corpus row, an
    outcome.json), which is read as it is. The one adapter at the rules' entry points
    (``signature``, ``bug_key``, ``fuzz.triage``, ``known_bugs.explain``)."""
    if isinstance(outcome, dict):
        return outcome
    return {f.name: getattr(outcome, f.name) for f in dataclasses.fields(outcome)}


def _offending_op(outcome: dict) -> str:
    if (outcome.get("extra") or {}).get("then"):
        return ""   # the call a later crash names, after the pass that broke the IR
    m = _OFFENDING.search(outcome.get("detail", "") or "")
    return f"Op(relax.{m.group(1)})" if m else ""


def _primitive(outcome: dict) -> str:
    step = (outcome.get("extra") or {}).get("failing_step") or {}
    return step.get("prim", "") if isinstance(step, dict) else ""


def _suffix(outcome: dict, site: str, prim: Optional[str] = None, root: bool = False) -> str:
    extra = outcome.get("extra") or {}
    failing_pass = extra.get("failing_pass", "")
    prim = _primitive(outcome) if prim is None else prim
    # An ONNX or PyTorch import error: the frontend converter that raised (Squeeze._impl_v13,
    # the ATen op softmax.int) or the ops the PyTorch importer has none for. For the bug key
    # (``root``), the method's defining class where the converter inherits it (ONNX's Min and
    # Max run MultiInputBase._impl_v1: one defect there is one bug).
    converter = (root and extra.get("converter_root")) or extra.get("converter", "") \
        if outcome.get("stage") == "import" else ""
    return (f" @ {site}" if site else "") + (f" [pass {failing_pass}]" if failing_pass else "") \
        + (f" [primitive {prim}]" if prim else "") \
        + (f" [converter {converter}]" if converter else "")


def signature(outcome: OutcomeLike) -> str:
    """The readable signature of a failing outcome (an ``Outcome`` or its stored JSON)."""
    outcome = outcome_fields(outcome)
    if outcome.get("verdict") == "pass":
        return ""
    kind = outcome.get("kind", "")
    parts = [kind, outcome.get("stage", ""), outcome.get("error_type", "")]
    if kind == "numeric":
        # No throw site: name what differed (the op and dtype of the output), not the values.
        parts.append((outcome.get("extra") or {}).get("numeric_key", ""))
    else:
        parts.append(normalize_message(outcome.get("message", "")))
        parts.append(_offending_op(outcome))
        parts.append(_native_frame(outcome))
    return " | ".join(p for p in parts if p) + _suffix(outcome, outcome.get("throw_site", ""))


def _native_frame(outcome: dict, root: bool = False) -> str:
    """Where a death by signal happened. Outside the run stage: the innermost ``tvm::`` frame
    of tvm-ffi's segfault backtrace. In the run stage the fault is in generated code, so the
    frame says nothing: the VM call that was running does (``extra["kernel"]``, a PrimFunc or
    builtin; for the bug key (``root``) without the numeric suffix LegalizeOps adds to a
    second PrimFunc of one op: take1 is take). While the module is constructed, the op whose
    node was being built (``extra["op"]``); for the bug key the type-inference function that
    op shares with others (``INFERENCE_FAMILIES``), where it shares one."""
    if outcome.get("kind") != "signal":
        return ""
    extra = outcome.get("extra") or {}
    if outcome.get("stage") == "materialize" and extra.get("op"):
        if root and extra["op"] in _INFERENCE_OF:
            return f"in type inference {_INFERENCE_OF[extra['op']]}"
        return f"in op {extra['op']}"   # Python's faulthandler hides the C++ frames there
    if outcome.get("stage") == "run":
        kernel = extra.get("kernel") or ""
        if root:
            kernel = re.sub(r"\d+$", "", kernel)
        return f"in kernel {kernel}" if kernel else ""
    frames = extra.get("native_frames") or []
    return f"in {frames[0]}" if frames else ""


_ROOT_KIND = {"verifier_build": "crash"}
_MEMORY_SIGNALS = {"SIGSEGV", "SIGABRT", "SIGBUS"}
# A round trip's message ends with the access path of what differs or is undefined.
_ROUNDTRIP_FIELD = re.compile(r"(?:round trip changes the (?:PrimFunc|module)|"
                              r"undefined variable \$) at "
                              r"\.\.\.(\w+)\.?$")
_IR_PLACE = re.compile(r"\. It was first defined at .*$|\.?\s+While this variable was "
                       r"previously defined at .*$| at \.\.\.[\w\[\]\.]*")
_UNKNOWN_INTRINSIC = re.compile(r"unknown intrinsic Op\(tirx\.\w+\)")
_UNRESOLVED_MATH = re.compile(r"Unresolved call Op\(tirx\.(?!tvm_)\w+\)")
# CUDA's compiler on TVM's float16 code: 'identifier "hcosh" is undefined' (also hnearbyint):
# TVM's CUDA codegen names cuda_fp16.h's h-prefixed math for every float16 intrinsic and
# defines only some that the header lacks (hpow, htan, ... in its prelude).
_UNDEFINED_HALF_MATH = re.compile(r'identifier "h[a-z0-9]+" is undefined')
# Schedule primitives that TVM implements with one body of code (src/s_tir/schedule/primitive/):
# compute_at and reverse_compute_at are one template (ComputeAtOrReverseComputeAtImpl<bool>,
# compute_at.cc); cache_read and cache_write rewrite their scope with twin mutators
# (CacheReadRewriter, CacheWriteRewriter in cache_read_write.cc) that substitute the cache
# buffer the same way. One error of that code (the same check or message) reached through
# either primitive is one defect, so a bug key names the family. Not for a wrong result, a
# signal, a hang or an out-of-memory: those say nothing of which code failed, and the primitive
# that made them is all the key has (tir "after cache_read" and "after cache_write" stay two).
PRIMITIVE_FAMILY = {
    "cache_read": "cache_read/cache_write", "cache_write": "cache_read/cache_write",
    "compute_at": "compute_at/reverse_compute_at",
    "reverse_compute_at": "compute_at/reverse_compute_at",
}
_NO_MESSAGE_KINDS = frozenset({"numeric", "signal", "hang", "oom"})
# TIR's verifier on a buffer access whose index list is wrong: a variable in it is out of scope
# ("Invalid use of undefined variable v at ...indices") or the list has the wrong length
# ("TIR TensorLoad at ... indexes 1-dimensional buffer B with 0 indices"). A rewrite that puts
# a wrong index list into an access shows one or the other depending on what the list held
# (reindex rewrites the buffer's accesses outside its block too: one before the block gets the
# still empty list, one after it the block's iteration variables). The malformation, not its
# wording, is the bug's, under the primitive or pass that made it.
_ACCESS_INDICES = re.compile(r"undefined variable \$ at \.\.\.indices\b|"
                             r"\bTIR Tensor(?:Load|Store)\b.* indexes N-dimensional buffer \$ "
                             r"with N indices")
ACCESS_INDICES = "TIR is ill-formed: a buffer access with a wrong index list"
# The same rewrite reaching another block's access region (its T.reads/T.writes) shows the
# variable at ``...reads[0].region[0].min.a``, which the signature collapses to ``...a``:
# read where the raw message still says so.
_ACCESS_REGION = re.compile(r"undefined variable \S+ at \S*\.(?:reads|writes)\[\d+\]\.region\b")


def _numeric_root(key: str) -> str:
    """A numeric key as the bug key reads it: a TIR wrong result that a schedule step made
    (``tir int32 after cache_read``) is that primitive's bug whatever the buffer's dtype; one
    without a guilty step (``tir int8``, the unscheduled build already wrong) keeps its dtype,
    which is what the code generator got wrong. A Relax op's wrong result after a random
    schedule (``relax.nn.avg_pool3d:float32 after compute_at``) is the guilty primitive's bug
    too, whichever op's PrimFunc it was applied to."""
    words = key.split(" ")
    if words[0] == "tir" and len(words) > 3 and words[2] == "after" and words[3] != "a":
        return " ".join(words[:1] + words[2:])
    if words[0].startswith("relax.") and len(words) > 2 and words[1] == "after":
        return "relax scheduled " + " ".join(words[1:])   # relax.nn.pool:float32 after split
    return key


# A Relax tensor type as a message prints it: R.Tensor((3, 1), dtype="float16"),
# R.Tensor(dtype="float32", ndim=2). Its shape is the case's, not the bug's.
_TENSOR_TYPE_SHAPE = re.compile(r"\bR\.Tensor\(\((?:[^()]|\([^()]*\))*\)(?=[,)])")
_RELAX_TYPE = re.compile(r"\bR\.(?:Tuple|Tensor|Prim|Shape|Object|Callable)\(")


def _collapse_types(msg: str) -> str:
    """Every Relax type a message prints (``R.Tuple(R.Prim(value=N), R.Tensor(...))``) as its
    kind alone: ``R.Tuple(...)``."""
    out, i = [], 0
    for m in _RELAX_TYPE.finditer(msg):
        if m.start() < i:
            continue   # inside a type already collapsed
        depth, j = 1, m.end()
        while j < len(msg) and depth:
            depth += {"(": 1, ")": -1}.get(msg[j], 0)
            j += 1
        out.append(msg[i:m.end()] + "...)")
        i = j
    return "".join(out) + msg[i:]


_DTYPE_WORD = re.compile(r"\b(?:b?float|u?int)\d+\b|\bbool\b")
# The class of the Relax or TIR expression a converter met where it wanted a constant, as a
# Python error quotes it ("object of type 'Call' has no len()", "'SizeVar' object has no
# attribute 'value'"): whichever expression the graph happened to give it.
_EXPR_CLASS = re.compile(r"'(?:Call|Var|DataflowVar|Constant|ShapeExpr|Tuple|TupleGetItem|"
                         r"PrimValue|SizeVar|IntImm|FloatImm|Add|Sub|Mul|FloorDiv)'")


def target_kind(outcome: dict) -> str:
    """The kind of target the failing variant built for ("llvm", "cuda", ...; "" if none):
    a stored variant's target is a dict, an older one's its string."""
    target = ((outcome.get("extra") or {}).get("variant") or {}).get("target") or {}
    return target.get("kind", "") if isinstance(target, dict) else str(target)


def bug_key(outcome: OutcomeLike) -> str:
    """The root-cause key of a failing outcome (an ``Outcome`` or its stored JSON): what a
    signature says minus what varies between findings of one bug (the throw site's line, the
    values and names after a C++ check's condition, the op CodeGenVM refuses). Every outcome
    with one signature has one bug key, so a bucket belongs to exactly one bug."""
    outcome = outcome_fields(outcome)
    if outcome.get("verdict") == "pass":
        return ""
    extra = outcome.get("extra") or {}
    if outcome.get("kind") == "crash" and outcome.get("stage") == "import" \
            and extra.get("dtype_op"):
        # An import crash on mixed dtypes (Mul: float32 x float64) whose float64 an earlier
        # converter declared against onnxruntime's float32 (worker.onnx_judge.dtype_origin):
        # that declared-dtype finding's bug, keyed as it is (kind, stage, op; no throw site
        # or crashing converter), not a second bug of the converter that met it.
        outcome = {**outcome, "kind": "shape_inference", "throw_site": "",
                   "extra": {k: v for k, v in extra.items()
                             if k not in ("converter", "converter_root")}}
        extra = outcome["extra"]
    message = outcome.get("message") or ""
    if target_kind(outcome) == "cuda" and _CUDA_COMPILER_HEAD.match(message):
        # TVM's CUDA source rejected by the CUDA compiler: nvcc where no GPU is present
        # ("Compilation error:", [pass nvcc]), NVRTC where one is ("NVRTC compilation
        # failed:"). One source defect, whichever compiler met it (float16 math TVM names but
        # never defines was 7e2b6d180b96 on a CPU machine and 3c832163d7ea on a GPU one).
        outcome = {**outcome, "throw_site": "",
                   "message": _CUDA_COMPILER_HEAD.sub("CUDA compiler:", message, count=1),
                   "extra": {**extra, "failing_pass": "CUDA compiler"}}
        extra = outcome["extra"]
    kind = outcome.get("kind", "")
    site = re.sub(r":\d+$", "", outcome.get("throw_site", "") or "")
    site = posixpath.normpath(site) if site else ""   # dir/../file.h is one file
    # A near-valid mutant's build failure (verifier_build) that ends in a check or error TVM
    # also reaches from valid programs (a crash) is that crash's bug: one key for both. Not
    # CodeGenVM's clear refusal: expected of a mutant, a bug on a valid program.
    if CODEGEN_REFUSAL not in (outcome.get("message") or ""):
        kind = _ROOT_KIND.get(kind, kind)
    parts = [kind, site or outcome.get("stage", "")]
    if kind == "numeric":
        root = _numeric_root(extra.get("numeric_key", ""))
        if ("torch" in extra or "onnx" in extra) and re.fullmatch(r"relax\.[\w.]+:\w+", root):
            # A frontend case's wrong op: what the importer made of it (PyTorch's selu
            # decomposed without its scale, met in float16, float32 and float64 as three
            # bugs), whichever dtype met it.
            root = root.split(":")[0]
        parts.append(root)
    elif kind == "shape_inference" and extra.get("dtype_op"):
        # An imported module declaring another dtype than the reference's: the op that made
        # it (worker.frontend.type_finding), whichever dtypes met it.
        # TVM's PyTorch importer writes out_dtype="float32" into each of its five convolution
        # converters (conv1d/2d/3d, conv_transpose1d/2d): one defect copied five times, met
        # as conv1d_transpose, conv2d and conv3d findings (three bugs before): one key.
        op = _CONV_FAMILY.sub("relax.nn.conv*", extra["dtype_op"])
        parts.append(f"declared dtype changed by {op}")
    elif kind == "shape_inference" and extra.get("negative_dim_op"):
        parts.append(f"negative dim declared by {extra['negative_dim_op']}")
    elif kind == "gpu_host_code":
        # The build's one failure to refuse (or schedule) a GPU PrimFunc with no thread,
        # whichever op's legalization left it so and whichever GPU target (worker.execute.
        # unbound_gpu_funcs): index_put, take_backward, adaptive_avg_pool3d (NDHWC) so far.
        parts.append("a PrimFunc for a GPU target binds no thread: built as host code")
    elif kind == "memory_plan_overlap":
        # Static memory planning placed a tensor over one still read (worker.execute.
        # planned_overlaps): one bug per kind of view the planner lost track of, whichever op
        # made it (vm.builtin.reshape: apache/tvm#20134; match_cast: #20220).
        parts.append(f"storage reused while read through {extra.get('view', '')}")
    elif kind == "signal":
        # One memory error ends by SIGSEGV one run and by glibc's SIGABRT (a corrupted heap)
        # the next: those are one class; SIGFPE, SIGILL... stay themselves.
        sig = outcome.get("error_type", "")
        parts.append("memory fault" if sig in _MEMORY_SIGNALS else sig)
        # Two different segfaults are two bugs: where no pass or primitive names the place,
        # the frame does. Where one does, not the frame: memory damage inside one primitive
        # ends by SIGSEGV in it one run (a frame) and by glibc's SIGABRT the next (none).
        if not extra.get("failing_pass") and not _primitive(outcome):
            parts.append(_native_frame(outcome, root=True))
    elif kind == "roundtrip" and _ROUNDTRIP_FIELD.search(
            normalize_message(outcome.get("message", ""))):
        # The printer mishandles one field (elem_offset=0 dropped beside offset_factor): the
        # text parses to another function, or names a variable it never defines, depending
        # on where the buffer is declared. One printer bug, whichever symptom.
        field = _ROUNDTRIP_FIELD.search(normalize_message(outcome.get("message", ""))).group(1)
        parts.append(f"the printed text loses or changes {field}")
    else:
        msg = normalize_message(outcome.get("message", ""))
        a, b = check_condition(msg)
        if a >= 0:   # the condition and the ops the message names, not its values
            ops = [m.group(0) for m in _OPS_NAMED.finditer(msg[b:])]
            parts.append(" ".join([f"Check failed: {msg[a:b]}"] + ops))
        else:
            if (extra.get("failing_pass") or _primitive(outcome)) and (
                    _ACCESS_INDICES.search(msg)
                    or _ACCESS_REGION.search(outcome.get("message") or "")):
                msg = ACCESS_INDICES
            # TVM's well-formedness messages end with where in the IR the definition or use
            # is (`at ...alloc_buffers`, `at ...var`, `at ...indices`): one primitive's one
            # mistake shows at whichever kind of node the case had there.
            msg = _IR_PLACE.sub("", msg)
            # LLVM's "unknown intrinsic Op(tirx.acos)": one missing lowering (of the float16
            # math intrinsics), whichever intrinsic a program reaches first.
            msg = _UNKNOWN_INTRINSIC.sub("unknown intrinsic Op(tirx.*)", msg)
            # The C and CUDA source generators' "Unresolved call Op(tirx.asinh)": the same
            # missing lowering of a math intrinsic, whichever the program reaches first (not
            # TVM's own builtins, tvm_call_packed & co., which are other bugs).
            msg = _UNRESOLVED_MATH.sub("Unresolved call Op(tirx.<math intrinsic>)", msg)
            msg = _UNDEFINED_HALF_MATH.sub('identifier "h<math function>" is undefined', msg)
            # Operand types quoted in a message ("Type of R.Tensor((3, 1), dtype=...)"): one
            # refusal whatever the shapes it met (ONNX Selu's float32 constant against a
            # float16 input, seen with a (3, 1) and a 0-d input as two bugs).
            msg = _TENSOR_TYPE_SHAPE.sub("R.Tensor(<shape>", msg)
            if outcome.get("stage") == "import" and extra.get("converter"):
                # An ONNX converter refusing a dtype ("dtype mismatch between input (int64)
                # and attribute"): one converter's one defect, whichever dtype met it.
                msg = _DTYPE_WORD.sub("<dtype>", msg)
                # ... and whatever types of the case's graph it quotes (Concat refusing a
                # tuple holding a PrimValue, met as R.Tuple(R.Prim(value=1)) and as
                # R.Tuple(R.Prim(value=n), R.Tensor((3,), ...)): one converter's one defect).
                msg = _collapse_types(msg)
                msg = _EXPR_CLASS.sub("'<expr>'", msg)
            parts.append(f"{outcome.get('error_type', '')}: {msg}".lstrip(": "))
        if CODEGEN_REFUSAL not in msg:
            parts.append(_offending_op(outcome))
    prim = _primitive(outcome)
    if kind not in _NO_MESSAGE_KINDS:
        prim = PRIMITIVE_FAMILY.get(prim, prim)
    return " | ".join(p for p in parts if p) + _suffix(outcome, "", prim, root=True)


def bug_id(outcome_or_key) -> str:
    """The id of the bug an outcome (an ``Outcome`` or its JSON) or bug key belongs to: 12 hex
    characters, from a hash distinct from bucket ids'."""
    key = outcome_or_key if isinstance(outcome_or_key, str) else bug_key(outcome_or_key)
    return hashlib.sha1(f"bug:{key}".encode()).hexdigest()[:12] if key else ""


def short(sig: str, width: int = 160) -> str:
    """A signature cut to ``width`` for one-line display, keeping its end (the op, the throw
    site and the pass tell bugs apart; a long message's middle does not)."""
    return sig if len(sig) <= width else sig[:width - 64] + " ... " + sig[-59:]


def signature_id(sig: str) -> str:
    return hashlib.sha1(sig.encode()).hexdigest()[:12]


def cause_id(sig: str, key: str, first_key: Optional[str]) -> str:
    """The id of the finding with signature ``sig`` and bug key ``key``, one per root cause
    (corpus buckets, smoke's findings): ``signature_id(sig)`` for the first cause met behind
    the signature (``first_key``: its key, None or "" when none is yet), another id for a
    second cause."""
    if not first_key or first_key == key:
        return signature_id(sig)
    return signature_id(f"{sig}\n{key}")
