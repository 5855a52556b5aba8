"""TVM bugs the catalogue's self-check has met, by op and dtype.

The fuzzer still generates these ops and dtypes (hiding a bug by avoiding its op would blind the
campaign); only the catalogue's own self-test (tests/test_catalogue.py) accepts a failure that
matches an entry here. Each entry is a real TVM 0.27 defect seen by `python -m worker.selfcheck`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from ..signature import outcome_fields

if TYPE_CHECKING:
    from ..outcome import Outcome


def _unsorted_axes(attrs: dict) -> bool:
    """Are the axes out of data order? Negative axes count from the end, so [-1, 1] of a 3-d
    tensor is [2, 1]: unsorted. ``_ndim`` (the first input's rank) is added by the matcher; where
    it is unknown, a mix of signs may be either and counts as unsorted."""
    axes = list(attrs.get("axes") or [])
    ndim = attrs.get("_ndim")
    if ndim is None:
        if any(a < 0 for a in axes) and any(a >= 0 for a in axes):
            return True
    else:
        axes = [a % ndim if ndim else a for a in axes]
    return axes != sorted(axes)


@dataclass(frozen=True)
class KnownBug:
    ops: tuple          # Relax op names
    dtypes: tuple       # input dtypes that trigger it ("*" = any)
    pattern: str        # regex over the problem text ("ErrorType: first line", or for a
                        # shape-rule problem "name: rule ..., TVM ...")
    note: str
    what: tuple = ("build", "run", "numeric", "materialize", "vm_load", "compare")
    when: Optional[Callable[[dict], bool]] = None   # predicate over the node's attrs (and
    #                                                 "_ndim", its first input's rank, if known)
    # predicate over the whole program, for a bug of a structure rather than one op's attrs
    program: Optional[Callable[[object], bool]] = None


def _declares_other_ret(prog) -> bool:
    """A function of ``prog`` holding an R.If is declared to return a type its body does not
    give (fuzz.mutate's ``wrong_ret``)."""
    for f in prog.functions:
        if f.ret_annot is not None and any(n.op == "if" for n in f.nodes()):
            body = f.value_types().get(f.ret)
            if body is None or body.to_json() != f.ret_annot.to_json():
                return True
    return False


KNOWN_TVM_BUGS: list[KnownBug] = [
    KnownBug(("if",), ("*",), r"SIGSEGV|SIGBUS|AllocTensor|alloc_tensor",
             "apache/tvm#17348: a function holding an R.If declared to return a type its "
             "branches do not give passes well_formed, compiles, and crashes the process at "
             "run time (segfault in vm.builtin.alloc_tensor)",
             what=("run",), program=_declares_other_ret),
    KnownBug(("if",), ("*",), r"StaticPlanBlockMemory produced ill-formed IR: Var storage\d* is "
             r"not defined",
             "apache/tvm#20191: StaticPlanBlockMemory allocates a storage inside one branch of "
             "an R.If and uses it in the other branch or after the If, where nothing defines "
             "it (the storage does not dominate its uses)", what=("build",)),
    KnownBug(("relax.acos", "relax.acosh", "relax.asin", "relax.asinh", "relax.atan",
              "relax.atan2", "relax.cosh", "relax.sinh"), ("float16",),
             r"unknown intrinsic .*tirx\.", "LLVM codegen has no float16 lowering for these "
             "inverse/hyperbolic intrinsics (float32 and float64 build)"),
    KnownBug(("relax.isfinite", "relax.isinf", "relax.isnan"), ("bfloat16",),
             r"Data type T\.bfloat16 not supported for (finiteness|isnan)",
             "finiteness checks reject bfloat16 during lowering"),
    KnownBug(("relax.power", "relax.log_add_exp"), ("bfloat16",),
             r"IsFloatType", "TIR's IsFloatType check does not count bfloat16 as a float"),
    KnownBug(("relax.strided_slice",), ("*",), r"axis < src_tensor_dim",
             "negative axes pass inference, but legalization hands them raw to "
             "topi.strided_slice", when=lambda a: any(x < 0 for x in a.get("axes", []))),
    KnownBug(("relax.strided_slice",), ("*",),
             # (a negative extent: in build/run messages, the shape check's "TVM -1", or a
             # frontend's declared shape, "T.int64(-1)")
             r"strides\[i\] < 0 \? \(end_i <= begin_i\)|bad_alloc|TVM -?\d*-\d|[,[] ?-\d"
             r"|int64\(-\d",
             "begin past end after clamping: numpy gives an empty slice, TVM infers a negative "
             "extent and then fails to build (static) or to allocate (symbolic); a consumer "
             "typed with the model's extent then fails construction",
             what=("build", "run", "shape-rule", "materialize")),
    KnownBug(("relax.arange",), ("*",), r".",
             "integer arange with a negative step infers the wrong length "
             "(arange(9, 9, -1) has 2 elements, arange(7, -3, -2) has 6): the length is "
             "rounded up as ceil division does for a positive divisor",
             # Only where the wrong length shows (inference, or a consumer refusing it at
             # construction): with "." at build/run/numeric any later failure of a program
             # that has such an arange would be called this bug.
             what=("shape-rule", "materialize"),
             when=lambda a: isinstance(a.get("step"), int) and a["step"] < 0
             and isinstance(a.get("start"), int) and isinstance(a.get("end"), int)),
    KnownBug(("relax.strided_slice",), ("*",), r"infers the wrong extent|rule",
             "assume_inbound=True with a negative stride infers the wrong extent (x[4:3:-1] "
             "of a (6,) tensor: 3 elements, numpy 1), arange's rounding again; found by the "
             "campaign's shape-inference check",
             what=("shape-rule", "materialize"),
             when=lambda a: a.get("assume_inbound")
             and any(x < 0 for x in (a.get("strides") or []))),
    KnownBug(("relax.take",), ("*",), r"MatchesCode\(kDLInt, kDLUInt\)",
             "take with axis=None and mode='nan' fails to build",
             when=lambda a: a.get("axis") is None and a.get("mode") == "nan"),
    KnownBug(("relax.scatter_elements",), ("int8", "int32", "int64", "uint8"),
             r"multiple types of integer divisions",
             "scatter_elements reduction='mean' on integers: topi's mean_func divides with '/'",
             when=lambda a: a.get("reduction") == "mean"),
    KnownBug(("relax.full", "relax.full_like"), ("*",),
             r"exceeds range of bool|output \d+ \(bool\)",
             "full/full_like with dtype bool and a fill other than 0/1 fails to legalize, or "
             "(a fractional fill such as -0.75) truncates it to an integer first and fills "
             "False where numpy's bool(-0.75) is True",
             # dtype None: full_like keeps its input's dtype, which the symptom says was bool
             when=lambda a: a.get("dtype") in ("bool", None)
             and a.get("fill_value", 0) not in (0, 1, True, False)),
    KnownBug(("relax.mean", "relax.variance", "relax.std"),
             ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"),
             r"Binary operators must have the same datatype|all inputs must have the same "
             r"dtype|tensor_a has different data type",
             "mean, variance and std of an integer tensor infer the input's dtype but legalize "
             "to another (mean and variance to int64, std to float32), so an op consuming "
             "them fails re-inference in LegalizeOps (checked: LegalizeOps turns "
             "mean(int8[6]) into call_tir(..., out_ty=R.Tensor((), int64)), variance(uint8) "
             "into int64 and std(int64) into float32; campaign seed 110000)",
             what=("build",)),
    KnownBug(("relax.nn.pixel_shuffle",), ("*",), r"has no attribute 'pixel_shuffle'",
             "legalization calls topi.nn.pixel_shuffle, which tvm.topi.nn does not export"),
    KnownBug(("relax.concat",), ("*",), r"Cannot convert from type `None` to `int`",
             "concat axis=None: legalization hands None to topi.concatenate",
             when=lambda a: a.get("axis") is None),
    KnownBug(("relax.repeat",), ("*",), r"Index out of range\. size: 0",
             "repeat axis=None on a 0-d tensor: legalization reads shape[0]",
             when=lambda a: a.get("axis") is None),
    KnownBug(("relax.split",), ("*",), r"split_indices must be sorted|bad_alloc",
             "split indices 0/repeated/descending (TOPI rejects) or past the end (bad_alloc)",
             when=lambda a: isinstance(a.get("indices_or_sections"), list)),
    KnownBug(("relax.expand_dims", "relax.broadcast_to"), ("*",),
             r"Index \d+ out of bounds \d+|Reshape expects the new shape to be convertible",
             "RewriteDataflowReshape mishandles zero-size tensors"),
    KnownBug(("relax.one_hot",), ("*",), r"printed module does not parse|round trip",
             "one_hot's on/off values print as bare ints and parse back as int64, so a module "
             "with int32 on/off values changes its result dtype on a print/parse round trip",
             what=("roundtrip",)),
    # reduce, sort and linalg families (KNOWN_BUG_P in reduce.py rates their triggers)
    KnownBug(("relax.argmax", "relax.argmin", "relax.grad.max_pool2d_backward"), ("bfloat16",),
             r"StructuralEqual",
             "argmax/argmin (and max_pool2d_backward, which TOPI builds on an argmax reducer) "
             "on bfloat16 fail to build (a StructuralEqual check on a binding)"),
    KnownBug(("relax.argmax", "relax.argmin"), ("*",), r"Cannot reduce a 0 dim Tensor",
             "argmax/argmin of a 0-d tensor pass inference but fail to legalize"),
    KnownBug(("relax.argmax", "relax.argmin"), ("uint8",), r"differ",
             "argmax/argmin return -1 where every element along the axis equals the dtype's "
             "min (max for argmin): the reducer starts at (-1, min_value), replaces on '>' only; "
             "valid programs reach it with uint8 zeros",
             what=("numeric",)),
    KnownBug(("relax.std",), ("int8", "int32", "int64", "uint8"), r"differ",
             "std on integers returns a float32 tensor at run time (typed as the int dtype)",
             what=("numeric",)),
    KnownBug(("relax.median",), ("*",), r"shape \(1,\), expected|outputs, expected|"
             r"must be TupleType|is instead of type T\.Tuple\(",
             "median: axis=None with keepdims (rank != 1) returns shape (1,); several axes or "
             "axis=[] disagree with the inferred type (tuple vs tensor)",
             what=("numeric", "build"),
             when=lambda a: a.get("axis") == [] or (isinstance(a.get("axis"), list)
                                                    and len(a["axis"]) > 1)
             or (a.get("axis") is None and a.get("keepdims"))),
    KnownBug(("relax.median", "relax.sort", "relax.argsort", "relax.topk"), ("bfloat16",),
             r"differ|.", "tvm.contrib.sort mishandles bfloat16: garbage values, heap "
             "corruption (later abort or hang)", what=("numeric", "run", "compare")),
    KnownBug(("relax.topk",), ("*",), r"vector::reserve",
             "topk with k < -1 fails at run time; k < 1 is documented as the whole axis",
             what=("run",), when=lambda a: a.get("k", 0) < -1),
    KnownBug(("relax.einsum",), ("*",), r"differ",
             "einsum summing over an empty (size 0) letter returns uninitialized memory "
             "instead of 0. Matched by op alone: the trigger is in the input shapes",
             what=("numeric",)),
    KnownBug(("relax.eye_like",), ("*",), r"requires the input (?:tensor|data) to have|"
             r"Expected (?:integer|boolean)(?: or boolean)? argument|"
             r"Binary operators must have the same datatype|"
             r"requires the input indices to have integer dtype|"
             r"all inputs must have the same dtype|"
             r"requires all the input tensors to have the same dtype|"
             r"(?:Stack|Concat) expects all input tensors to have the same dtype|"
             r"All information in Type annotations must be correct|"
             r"Argument \d+ type mismatch: expected R\.Tensor|"
             r"TVMTensorCopyFromTo: The size in bytes must exactly match",
             "eye_like ignores its dtype when legalized (the result keeps the input's dtype), "
             "so an op consuming it fails re-inference in LegalizeOps (or, where the consumer "
             "is already a call_tir, the well-formed check after it; a copy into a tensor of "
             "the declared dtype, its size check at run time)",
             when=lambda a: a.get("dtype") is not None),
    KnownBug(("relax.nn.attention", "relax.nn.attention_bias"), ("float16", "bfloat16"),
             r"Binary operators must have the same datatype|tensor_a has different data type|"
             r"Argument \d+ type mismatch: expected R\.Tensor",
             "attention on float16 or bfloat16 with an explicit scale legalizes to a float32 "
             "result, so a consumer fails re-inference in LegalizeOps (or, where the consumer "
             "is already a call_tir, the well-formed check after it)",
             when=lambda a: a.get("scale") is not None),
    KnownBug(("relax.nn.layer_norm", "relax.nn.group_norm", "relax.nn.instance_norm",
              "relax.nn.rms_norm", "relax.mean", "relax.variance", "relax.std"), ("*",),
             r"Divide by zero", "normalizing or averaging over an axis of size 0 crashes "
             "constant folding (Divide by zero) instead of giving NaN or a clean error"),
    # nn family (fuzz/catalogue/nn.py samples these triggers with probability KNOWN_BUG_P)
    KnownBug(("relax.nn.adaptive_avg_pool1d",), ("*",), r"Cannot convert from type `ir\.(?:IntImm|Var)`",
             "adaptive_avg_pool1d output_size=None: legalization passes a dim (an IntImm, or a "
             "Var when the dim is symbolic), topi wants a list",
             when=lambda a: a.get("output_size") is None),
    KnownBug(("relax.nn.batch_norm",), ("float16", "bfloat16"), r"float32|Mismatched \S*dtype",
             "batch_norm on float16/bfloat16 legalizes to float32 outputs (all three with "
             "training=True, the normalized data otherwise), so the function's declared type no "
             "longer holds and the next op that meets them refuses mixed dtypes (or the VM's "
             "argument check does, at run time)"),
    KnownBug(("relax.nn.batch_norm",), ("*",), r"list\.remove",
             "batch_norm training=True with a negative axis fails in topi.batch_norm",
             when=lambda a: a.get("training") and a.get("axis", 0) < 0),
    KnownBug(("relax.nn.instance_norm",), ("*",), r"Index -\d+ out of bounds",
             "instance_norm with a negative channel_axis fails to legalize",
             when=lambda a: a.get("channel_axis", 0) < 0),
    KnownBug(("relax.nn.layer_norm", "relax.nn.group_norm", "relax.nn.instance_norm"), ("*",),
             r"differ", "center=False / scale=False are ignored: beta and gamma are always "
             "applied", what=("numeric",),
             when=lambda a: not a.get("center", True) or not a.get("scale", True)),
    KnownBug(("relax.nn.layer_norm",), ("*",), r"differ",
             "layer_norm with unsorted axes: relax shapes gamma/beta in axes order, topi indexes "
             "them in data order", what=("numeric",),
             when=lambda a: _unsorted_axes(a)),
    KnownBug(("relax.nn.rms_norm",), ("*",), r"Tensor dimension mismatch in read",
             "rms_norm over non-trailing axes, or over every axis, fails to build"),
    KnownBug(("relax.nn.rms_norm",), ("float64",), r"differ",
             "rms_norm computes float64 inputs in float32", what=("numeric",)),
    KnownBug(("relax.nn.attention", "relax.nn.attention_bias"), ("*",), r"differ",
             "grouped-query attention (fewer K/V heads than Q heads) passes the shape rule but "
             "legalization reshapes K/V as if they had all heads: wrong results (batch > 1). "
             "Matched by op alone: the trigger is in the input shapes", what=("numeric",)),
    KnownBug(("relax.meshgrid",), ("*",),
             r"rule|Tuple|[Ss]hape|mismatch|differ|infers the wrong",
             "meshgrid with indexing=\"xy\" infers the \"ij\" shapes (first two dims not "
             "swapped) while TOPI computes numpy's xy grids: a consumer typed by the inferred "
             "shape then reads a transposed buffer", what=("shape-rule", "materialize",
                                                           "build", "run", "numeric"),
             when=lambda a: a.get("indexing") == "xy"),
    KnownBug(("relax.meshgrid",), ("*",), r"The type of Tuple must be TupleType",
             "meshgrid of a single tensor legalizes to a tensor (call_te of topi.meshgrid's "
             "one-element list), not a 1-tuple: the TupleGetItem after it fails to build"),
    KnownBug(("relax.grad.take_backward",), ("*",), r"unexpected keyword argument 'mode'",
             "take_backward prints a mode= attribute its TVMScript parser does not take: "
             "every module with it fails the print/parse round trip", what=("roundtrip",)),
    KnownBug(("relax.image.grid_sample",), ("*",), r"Divide by zero",
             "grid_sample with padding_mode=\"reflection\" and align_corners=True on an input "
             "of height or width 1: TOPI reflects over a span of size - 1 = 0 with an integer "
             "division by it (PyTorch gives the one pixel)",
             when=lambda a: a.get("padding_mode") == "reflection" and a.get("align_corners")),
    KnownBug(("relax.grad.max_pool2d_backward",), ("*",), r"differ",
             "max_pool2d_backward returns garbage (uninitialized memory) at some positions when "
             "windows overlap (stride < window): x = [0, 1, 2, 3], window "
             "1x2, stride 1, gradient ones gives [0, 0, -4.6e11, 3e-41], numpy [0, 1, 1, 1]. "
             "Matched by op alone: the trigger is in the shapes", what=("numeric",)),
    KnownBug(("relax.vision.non_max_suppression",), ("float16", "bfloat16", "float64"),
             r"Currently only supports input dtype to be float",
             "non_max_suppression infers and legalizes for any float data, but TOPI sorts the "
             "scores with tvm.contrib.sort.argsort_nms, whose ICHECKs take float32 only (and "
             "float16 only on ARM with FP16 arithmetic): float16, bfloat16 and float64 data "
             "build and then abort at run time", what=("run",)),
    KnownBug(("relax.vision.roi_align",), ("float16", "bfloat16"),
             r"Binary operators must have the same datatype|all inputs must have the same "
             r"dtype|tensor_a has different data type|type mismatch: expected R\.Tensor",
             "roi_align infers the data's dtype, but on float16 and bfloat16 data it legalizes "
             "to float32 whatever the rois' dtype (TOPI's bilinear sampling clamps with the "
             "float32 literal 0.0, and the weights promote the result; checked: LegalizeOps "
             "gives call_tir(..., out_ty=R.Tensor(..., float32)) for float16 data with float16 "
             "or float32 rois, and for bfloat16), so an op consuming it with another "
             "float16/bfloat16 operand fails re-inference in LegalizeOps (campaign seed 109: "
             "conv2d_transpose of a bfloat16 roi_align), or a called PrimFunc's argument check "
             "(\"Argument N type mismatch\")", what=("build",)),
    KnownBug(("relax.vision.roi_align",), ("*",),
             r"Binary operators must have the same datatype|all inputs must have the same "
             r"dtype|tensor_a has different data type|type mismatch: expected R\.Tensor",
             "roi_align with float64 rois legalizes to a float64 result on float32 (or "
             "float16/bfloat16) data, where inference gives the data's dtype: TOPI computes "
             "the sampling in the rois' dtype (checked on 40 one-op programs: every one with "
             "float64 rois returns float64 after LegalizeOps; bench/validity.py seed 25: a consumer "
             "PrimFunc called with it fails \"Argument N type mismatch: expected float32, "
             "given float64\")", what=("build",),
             when=lambda a: a.get("rois_dtype") == "float64"),
    KnownBug(("relax.vision.all_class_non_max_suppression",), ("bfloat16",), r"differ|.",
             "all_class_non_max_suppression sorts the scores with tvm.contrib.sort.argsort, "
             "which mishandles bfloat16 (as for sort/argsort above): selections come out of "
             "score order (campaign seed 25 of the self-check: class 1's selected scores "
             "0.387, 0.167, 1.156; TOPI documents them descending)",
             what=("numeric", "run", "compare")),
    KnownBug(("relax.vision.all_class_non_max_suppression",), ("float64",),
             r"mismatched types\. False type: float64; True type: float32",
             "all_class_non_max_suppression infers float64 boxes but fails to legalize them: "
             "nms_util.calculate_overlap builds Select(u <= 0.0, 0.0, area / u) with a "
             "float32 literal beside float64 arithmetic", what=("build",)),
]


def explain(program, outcome: Outcome | dict):
    """The known bug that explains a failing outcome of ``program`` (an ``Outcome`` or its
    stored JSON), or None: some op of the program matches an entry for the outcome's stage
    (numeric, roundtrip, build, run...)."""
    outcome = outcome_fields(outcome)
    what = outcome.get("kind") if outcome.get("kind") in ("numeric", "roundtrip") \
        else outcome.get("stage")
    # A frontend case's import declaring a negative dim names the Relax op whose inference
    # made it (worker.frontend.type_finding): that op's shape rule broken, met at import
    # (the campaign's shape check meets the same inference in a Relax case), so only that
    # op's "shape-rule" entries can explain it.
    made_by = (outcome.get("extra") or {}).get("negative_dim_op") \
        if outcome.get("kind") == "shape_inference" and what == "import" else None
    if made_by:
        what = "shape-rule"
    text = outcome.get("detail") if what == "numeric" else \
        f"{outcome.get('error_type')}: {outcome.get('message')}"
    if outcome.get("kind") == "oom":
        # Out of memory under the sandbox's cap is what std::bad_alloc is without the cap (the
        # same allocation, refused sooner): entries name it "bad_alloc". The sandbox says
        # where the child was, or "sandbox" when it could not tell: then the run.
        what = what if what not in (None, "", "sandbox") else "run"
        text = f"std::bad_alloc: {outcome.get('message')}"
    for f in program.functions:
        tys = {p.name: p.runtime_ty for p in f.params}
        tys.update({n.name: n.ty for n in f.nodes()})
        for n in f.nodes():
            if made_by and n.op != made_by:
                continue
            # The op's own dtypes (its inputs' and its result's), not the whole program's: a
            # bfloat16 elsewhere must not make a float32 topk "the bfloat16 sort bug".
            own = {getattr(t, "dtype", None) for t in [n.ty] + [tys.get(a) for a in n.args
                                                                  if isinstance(a, str)]}
            first = tys.get(n.args[0]) if n.args and isinstance(n.args[0], str) else None
            ndim = getattr(first, "ndim", None)
            attrs = n.attrs if ndim is None or ndim < 0 or n.attrs is None \
                else {**n.attrs, "_ndim": ndim}
            bug = match(n.op, own - {None}, text or "", what, attrs)
            if bug and (bug.program is None or bug.program(program)):
                return bug
    return None


def match(op: str, dtypes, message: str, what: str = "build", attrs: Optional[dict] = None):
    for bug in KNOWN_TVM_BUGS:
        if op in bug.ops and what in bug.what \
                and ("*" in bug.dtypes or set(dtypes) & set(bug.dtypes)) \
                and re.search(bug.pattern, message) \
                and (bug.when is None or attrs is None or bug.when(attrs)):
            return bug
    return None
