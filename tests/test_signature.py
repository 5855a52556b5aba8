from fuzz.signature import bug_id, bug_key, normalize_message, signature, signature_id


def _o(msg, site="src/target/llvm/codegen_llvm.cc:1532", **kw):
    return {"verdict": "fail", "kind": "crash", "stage": "build", "error_type": "InternalError",
            "message": msg, "throw_site": site, **kw}


OP = ('unknown intrinsic ir.Op(span=None, ty=ir.Type(span=None), name="tirx.{}", '
      'description="", arguments=(), attrs_type_key="", num_inputs=1, support_level=10)')


def test_op_repr_is_reduced_to_the_op_name():
    assert normalize_message(OP.format("acos")) == "unknown intrinsic Op(tirx.acos)"


def test_numbers_names_and_hex_do_not_split_one_bug():
    a = "Check failed: 3 vs 4 at lv12 buffer p_4 addr 0x7ffe12 shape (1, 64, 56, 56)"
    b = "Check failed: 2 vs 7 at lv3 buffer p_19 addr 0xdeadbeef shape (1, 768, 64, 64)"
    assert signature(_o(a)) == signature(_o(b))


def test_a_set_of_names_printed_in_either_order_is_one_bug():
    # from_exported_program lists its unconverted ops from a set: the order is the hash's
    a = "Unsupported function types ['rms_norm.default', 'argsort.stable']"
    b = "Unsupported function types ['argsort.stable', 'rms_norm.default']"
    assert signature(_o(a)) == signature(_o(b))
    assert signature(_o(a)) != signature(_o("Unsupported function types ['amin.default']"))


def test_dtypes_and_ops_are_kept_apart():
    assert signature(_o(OP.format("acos"))) != signature(_o(OP.format("cosh")))
    a = "Data type T.bfloat16 not supported for finiteness ops."
    b = "Data type T.float16 not supported for finiteness ops."
    assert signature(_o(a)) != signature(_o(b))


def test_throw_site_stage_and_kind_are_part_of_it():
    m = "Check failed: x"
    assert signature(_o(m)) != signature(_o(m, site="src/relax/op/op.cc:10"))
    assert signature(_o(m)) != signature(_o(m, stage="run"))
    assert signature(_o(m)) != signature(_o(m, kind="verifier_build"))
    assert len(signature_id(signature(_o(m)))) == 12


def test_pass_has_no_signature():
    assert signature({"verdict": "pass"}) == ""


def test_rank_dependent_argument_lists_do_not_split_one_bug():
    a = 'Check failed: (IsFloatType(a.ty())) is false: T.te.tensor_load(metadata["te.Tensor"][0])'
    b = ('Check failed: (IsFloatType(a.ty())) is false: '
         'T.te.tensor_load(metadata["te.Tensor"][0], ax0, ax1, ax2)')
    assert signature(_o(a)) == signature(_o(b))
    assert normalize_message("f(ax0, ax1, ax2) g(ax0)") == normalize_message("f(ax0) g(ax0, ax1)")


def test_codegen_vm_signature_names_the_offending_op():
    msg = ("CodeGenVM cannot emit this Relax operator directly. Run the appropriate lowering "
           "pass, or route the operator to an external codegen before VM codegen.")
    exp = _o(msg, detail=msg + "\nOffending call:\nR.exp(p1)")
    mul = _o(msg, detail=msg + "\nOffending call:\nR.multiply(p1, p2)")
    assert "Op(relax.exp)" in signature(exp)
    assert signature(exp) != signature(mul)


def test_access_paths_drop_the_function_name():
    # 0.27 names the function in an access path, 0.26 does not: one bug, one signature.
    a = normalize_message('Invalid use of undefined variable elem_offset at <root>.functions'
                          '[I.GlobalVar("main")].body.block.body.seq[0].buffer.elem_offset.')
    b = normalize_message("Invalid use of undefined variable elem_offset at "
                          "<root>.body.block.body.seq[3].buffer.elem_offset.")
    assert a == b and "GlobalVar" not in a


# --- names, paths and operands (real TVM 0.27 messages met by campaigns) ----------------------
ROOT = '<root>.functions[I.GlobalVar("main")].body.block.'
VEC = ('Check failed: (is_scalable_expr && TargetHasVLA(target_)) is false: Failed to vectorize '
       'loop with extent {} for target {{"kind":"llvm","tag":"","keys":["cpu"],"host":{{"kind":'
       '"llvm","mcpu":"{}"}}}}')


def _same(*msgs, **kw):
    return len({signature(_o(m, **kw)) for m in msgs}) == 1


def test_renamed_buffers_and_their_paths_give_one_signature():
    a = ("ValueError: TIR is ill-formed, due to multiple nested definitions of variable "
         f"t1_local. It was first defined at {ROOT}alloc_buffers[0], and was re-defined at "
         f"{ROOT}body.seq[1].buffer")
    b = a.replace("t1_local", "w1_local").replace("[0]", "[2]").replace("seq[1]", "seq[3]")
    c = a.replace("t1_local", "t2_global")
    assert _same(a, b, c, stage="schedule", site="")
    d = f"DiagnosticError: TIR is ill-formed: buffer x16 is used at {ROOT}body.seq[4].body.reads[0].source without a prior DeclBuffer or other declaration."
    e = d.replace("x16", "acc").replace("seq[4].body.reads[0]", "seq[0].body.body.writes[1]")
    assert _same(d, e, stage="parse", site="")
    assert "buffer $ is used at ...source without a prior DeclBuffer" in normalize_message(d)


def test_access_paths_collapse_to_their_last_field():
    msgs = [f"print/parse round trip changes the PrimFunc at {p}.elem_offset"
            for p in ("params[0].ty", "params[3].ty", "alloc_buffers[1]", "body.seq[2].buffer")]
    assert _same(*msgs, kind="roundtrip", stage="roundtrip", site="")
    assert normalize_message(msgs[0]).endswith("at ...elem_offset")
    # ...but another field is another failure
    assert not _same(msgs[0], msgs[0].replace("elem_offset", "strides"), site="")
    loops = [f"ValueError: Invalid use of undefined variable {v} at {ROOT}{p}."
             for v, p in (("i3", "body.seq[1].body.body.predicate.a"),
                          ("k6_0", "body.seq[4].body.block.init.body.predicate.a.a.a"),
                          ("v_k", "body.predicate.a"))]
    assert _same(*loops, stage="schedule", site="")


def test_a_printer_bug_is_one_bug_in_a_primfunc_alone_and_in_a_module_calling_it():
    # A Relax program's call_tir brings the TIR generator's PrimFuncs into the module: the
    # printer's elem_offset bug shows through the module's round trip too
    tir = _o("print/parse round trip changes the PrimFunc at params[0].ty.elem_offset",
             kind="roundtrip", stage="roundtrip", site="", error_type="ValueError")
    relax = dict(tir, message="print/parse round trip changes the module at "
                              "params[1].ty.elem_offset")
    assert bug_key(tir) == bug_key(relax)
    assert bug_key(relax) != bug_key(dict(relax, message="print/parse round trip changes the "
                                                         "module at body.blocks[0].bindings"))


def test_symbolic_vars_and_target_details_give_one_signature():
    assert _same(VEC.format("n", "skylake"), VEC.format("seq_len", "znver3"),
                 VEC.format("m", "skylake"), site="src/tirx/transform/vectorize_loop.cc:1323")
    mm = ("Matmul requires the reduction length of the operands to be equal.  However, the LHS "
          "{} has shape R.shape([{}, 4]), while the RHS {} has shape R.shape([5, {}]).  The "
          "reduction dimensions of T.int64(4) and T.int64(5) are not equal.")
    assert _same(mm.format("x", "n", "gv1", "m"), mm.format("inp0", "seq_len", "gv", "batch"),
                 site="src/relax/op/tensor/linear_algebra.cc:140")
    region = ("Check failed: (var.has_value()) is false: TensorRegion pattern match failed: "
              "{} * T.int64({}) + {}")
    assert _same(region.format("v_ax2", 2, "v_rv0"), region.format("v_i", 4, "v_k"))


def test_ops_passes_exceptions_check_text_and_dtypes_stay_apart():
    base = _o("Check failed: (a == b) is false: x", failing_pass="")
    variants = [
        _o("Check failed: (a != b) is false: x"),                       # check text
        _o("Check failed: (a == b) is false: x", error_type="ValueError"),   # exception class
        dict(base, extra={"failing_pass": "FuseOps"}),                  # pass
        dict(base, extra={"failing_pass": "FuseTIR"}),
        dict(base, extra={"failing_step": {"prim": "rfactor"}}),        # schedule primitive
        _o("Check failed: (a == b) is false: x", site="src/tirx/ir/stmt.cc:698"),
    ]
    sigs = {signature(o) for o in [base] + variants}
    assert len(sigs) == len(variants) + 1
    assert signature(_o("Shape of relax.nn.conv2d is wrong")) != \
        signature(_o("Shape of relax.nn.conv1d is wrong"))
    assert signature(_o(OP.format("asin"))) != signature(_o(OP.format("acos")))
    assert signature(_o("Data type T.bfloat16 not supported")) != \
        signature(_o("Data type T.float16 not supported"))
    # vocabulary with digits is not a name
    assert normalize_message("conv2d on x86_64 with log2 of a float32x4") == \
        "conv2d on x86_64 with log2 of a float32x4"
    # English stays: "a", "e.g.", words after "buffer" that are not names
    assert normalize_message("buffer is a thing, e.g. here") == "buffer is a thing, e.g. here"
    assert normalize_message("dtype mismatch: buffer's dtype is `T.uint16`") == \
        "dtype mismatch: buffer's dtype is `T.uint16`"


# --- bugs: signatures grouped by root cause ------------------------------------------------
REFUSAL = ("CodeGenVM cannot emit this Relax operator directly. Run the appropriate lowering "
           "pass, or route the operator to an external codegen before VM codegen.")


def _refusal(call, kind="verifier_build", line=160):
    return _o(REFUSAL, site=f"src/relax/backend/vm/codegen_vm.cc:{line}", kind=kind,
              detail=REFUSAL + "\nOffending call:\n" + call, extra={"failing_pass": ""})


def test_codegen_vm_refusal_is_one_bug_whatever_the_op():
    outs = [_refusal(c) for c in ("R.exp(p1)", "R.nn.conv2d(p1, p2)", "R.scatter_elements(x)")]
    assert len({signature(o) for o in outs}) == 3          # a bucket per op...
    assert len({bug_id(o) for o in outs}) == 1             # ...one bug
    assert "Op(" not in bug_key(outs[0]) and "codegen_vm.cc:" not in bug_key(outs[0])
    # the same refusal on a valid program is another bug (another kind)
    assert bug_id(_refusal("R.exp(p1)", kind="crash")) != bug_id(outs[0])
    # the older releases' internal error names its op: one bug per op
    old = [_o(f"CodeGenVM cannot handle this intrinsic now: Op(relax.{op})",
              site="src/relax/backend/vm/codegen_vm.cc:401") for op in ("multiply", "permute_dims")]
    assert bug_id(old[0]) != bug_id(old[1])


def test_one_check_with_other_values_lines_and_names_is_one_bug():
    a = _o("Check failed: value >= 0 (-2 vs. 0) : Literal value -2 is negative for unsigned "
           "integer type uint64", site="src/ir/expr.cc:808", error_type="ValueError",
           kind="late_validation", extra={"failing_pass": "tirx.MakePackedAPI"})
    b = dict(a, throw_site="src/ir/expr.cc:812",
             message="Check failed: value >= 0 (-4 vs. 0) : Literal value -4 is negative for "
                     "unsigned integer type uint32")
    assert signature(a) != signature(b) and bug_id(a) == bug_id(b)
    assert bug_key(a) == ("late_validation | src/ir/expr.cc | Check failed: value >= N "
                          "[pass tirx.MakePackedAPI]")
    # a signature determines its bug
    assert bug_id(a) == bug_id(dict(a, detail="other detail", seconds=9))


def test_different_root_causes_stay_different_bugs():
    base = _o("Check failed: (a == b) is false: x", extra={"failing_pass": "FuseOps"})
    others = [
        dict(base, message="Check failed: (a != b) is false: x"),
        dict(base, throw_site="src/relax/op/op.cc:10"),
        dict(base, extra={"failing_pass": "FuseTIR"}),
        dict(base, kind="late_validation"),   # (verifier_build at one check: the next test)
        dict(base, extra={"failing_pass": "FuseOps", "failing_step": {"prim": "split"}}),
        dict(base, message="Check failed: (a == b) is false: Op(relax.exp) is wrong"),
    ]
    ids = {bug_id(o) for o in [base] + others}
    assert len(ids) == len(others) + 1
    # LLVM's float16 "unknown intrinsic": one missing lowering, whichever op reaches it first
    # (the 10-minute campaign's triage found one bug split eight ways); buckets stay per op.
    assert bug_id(_o(OP.format("cosh"))) == bug_id(_o(OP.format("atan")))
    assert signature(_o(OP.format("cosh"))) != signature(_o(OP.format("atan")))
    num = {"verdict": "fail", "kind": "numeric", "stage": "compare",
           "extra": {"numeric_key": "relax.argsort:float64"}}
    assert bug_id(num) != bug_id(dict(num, extra={"numeric_key": "relax.sort:float64"}))
    assert bug_id({"verdict": "pass"}) == "" and len(bug_id(base)) == 12
    assert bug_id(base) != signature_id(signature(base))
    assert bug_id(bug_key(base)) == bug_id(base)


def test_a_mutant_reaching_a_crash_valid_programs_reach_is_that_crash_s_bug():
    """verifier_build (a near-valid mutant's build failed) and crash (a valid program's build
    failed) at one TVM check are one bug; CodeGenVM's refusal stays apart (above)."""
    crash = _o("Check failed: block_realize == old_block_realize_.get() (0x1 vs. 0x2) : ",
               site="src/s_tir/schedule/primitive/reduction.cc:1356", kind="crash",
               error_type="InternalError", extra={"failing_step": {"prim": "rfactor"}})
    mutant = dict(crash, kind="verifier_build")
    assert signature(crash) != signature(mutant) and bug_id(crash) == bug_id(mutant)


def test_a_failed_compiler_run_is_named_by_the_compiler_s_first_error():
    """TVM raises nvcc's and gcc's failures as the generated source, then the compiler's
    output: the source's first line (#ifdef ...) would put every compile error in one bucket."""
    from worker.execute import first_message_line

    cuda = ('#ifdef __CUDACC_RTC__\n#define int64_t long long\n#endif\n\nCompilation error:\n'
            '/tmp/t/tvm_kernels.cu(123): error: identifier "hnearbyint" is undefined\n'
            '/tmp/t/tvm_kernels.cu(51): warning #177-D: function "f" was declared\n')
    assert first_message_line(cuda) == 'Compilation error: identifier "hnearbyint" is undefined'
    assert first_message_line("Check failed: (x) is false:\nmore") == \
        "Check failed: (x) is false:"
    # With a GPU, TVM compiles with NVRTC (seen on an H200: float16 cosh)
    nvrtc = ('NVRTC compilation failed:\n/usr/local/cuda-13.0/include/cuda_fp8.hpp(1461): '
             'warning #1444-D: class "double4" was declared deprecated\n'
             'tvm_kernels.cu(147): error: identifier "hcosh" is undefined\n')
    assert first_message_line(nvrtc) == \
        'NVRTC compilation failed: identifier "hcosh" is undefined'


def test_missing_float16_math_in_cuda_source_is_one_bug_whichever_function():
    """TVM's CUDA codegen calls h-prefixed float16 math it never defines (hcosh, hnearbyint):
    one bug, whichever function a program reaches first; each is its own bucket."""
    def o(fn, head="NVRTC compilation failed:"):
        return _o(f'{head} identifier "{fn}" is undefined', site="", error_type="RuntimeError")

    assert signature(o("hcosh")) != signature(o("hnearbyint"))
    assert bug_id(o("hcosh")) == bug_id(o("hnearbyint"))
    assert bug_id(o("hcosh")) != bug_id(o("compute_1"))


def test_cuda_source_rejected_by_nvcc_or_nvrtc_is_one_bug():
    """Without a GPU TVM compiles CUDA source with nvcc ("Compilation error:", [pass nvcc]);
    with one, with NVRTC. The same float16 math came back as 7e2b6d180b96 on a CPU machine,
    3c832163d7ea on a GPU one: a campaign over both kinds of workers had two bugs for one.
    The C backend's compiler (gcc, the same head) stays its own."""
    def o(head, target, **extra):
        return _o(f'{head} identifier "hcosh" is undefined', site="", error_type="RuntimeError",
                  extra={"variant": {"target": {"kind": target, "arch": "sm_80"}}, **extra})

    nvcc = o("Compilation error:", "cuda", failing_pass="nvcc")
    nvrtc = o("NVRTC compilation failed:", "cuda")
    assert bug_id(nvcc) == bug_id(nvrtc)
    assert signature(nvcc) != signature(nvrtc)   # buckets still say which compiler
    assert bug_id(o("Compilation error:", "c")) != bug_id(nvcc)


def test_a_header_reached_through_two_directories_is_one_throw_site():
    from fuzz.signature import bug_key

    def crash(site):
        return {"verdict": "fail", "kind": "crash", "stage": "build", "error_type": "TypeError",
                "message": "Binary operators must have the same datatype", "throw_site": site}
    a = crash("src/relax/op/distributed/../op_common.h:120")
    b = crash("src/relax/op/tensor/../op_common.h:120")
    assert bug_key(a) == bug_key(b) and "src/relax/op/op_common.h" in bug_key(a)


def test_one_printer_field_lost_two_ways_is_one_bug():
    """elem_offset=0 beside offset_factor=4 is not printed: a parameter parses back with
    another elem_offset, a decl_buffer's text names an undefined elem_offset (the messages of
    two campaign findings, reduced)."""
    from fuzz.signature import bug_key

    def rt(etype, message):
        return {"verdict": "fail", "kind": "roundtrip", "stage": "roundtrip",
                "error_type": etype, "message": message}
    param = rt("ValueError", "print/parse round trip changes the PrimFunc at "
               "params[0].ty.elem_offset")
    decl = rt("DiagnosticError", "printed PrimFunc does not parse: ValueError: Invalid use of "
              "undefined variable elem_offset at <root>.functions[I.GlobalVar(\"main\")]"
              ".body.buffer.elem_offset.")
    other = rt("DiagnosticError", "printed PrimFunc does not parse: 'Var' object has no "
               "attribute 'partition'")
    assert bug_key(param) == bug_key(decl) and "elem_offset" in bug_key(param)
    assert bug_key(other) != bug_key(param)


def test_c_codegen_missing_math_intrinsics_are_one_bug_and_builtins_another():
    from fuzz.signature import bug_key

    def c(op):
        return {"verdict": "fail", "kind": "crash", "stage": "build",
                "error_type": "InternalError", "message": f"Unresolved call Op(tirx.{op})",
                "throw_site": "src/target/source/codegen_c.cc:700"}
    assert bug_key(c("asinh")) == bug_key(c("acos"))
    assert bug_key(c("tvm_call_packed")) != bug_key(c("acos"))


def test_a_tir_wrong_result_made_by_a_primitive_is_one_bug_whatever_the_dtype():
    """cache_read's wrong results on an int32 and a float32 buffer are one bug (the step that
    made them wrong names it); an unscheduled build's wrong int8 result and float32 result
    stay two (the code generator's handling of the dtype is the bug)."""
    def numeric(key):
        return {"verdict": "fail", "kind": "numeric", "stage": "compare", "message": "B[0]",
                "extra": {"numeric_key": key}}

    assert bug_id(numeric("tir int32 after cache_read")) == \
        bug_id(numeric("tir float32 after cache_read"))
    assert bug_id(numeric("tir int32 after cache_read")) != \
        bug_id(numeric("tir int32 after cache_write"))
    assert bug_id(numeric("tir int8")) != bug_id(numeric("tir float32"))
    assert signature(numeric("tir int32 after cache_read")) != \
        signature(numeric("tir float32 after cache_read"))


def test_where_in_the_ir_a_redefinition_shows_is_not_part_of_the_bug():
    """loop_partition copies a block without fresh definitions: the verifier names a block
    iter var in one case and a block-allocated buffer in another (access paths ...var and
    ...alloc_buffers). One primitive's one mistake: one bug; the signatures stay apart."""
    def crash(msg):
        return {"verdict": "fail", "kind": "crash", "stage": "schedule",
                "error_type": "InternalError", "message": msg,
                "extra": {"failing_step": {"prim": "loop_partition"}}}

    root = '<root>.functions[I.GlobalVar("main")].body.block.body.seq[1].block'
    var = crash(f"ValueError: TIR is ill-formed, due to multiple definitions of variable v5. "
                f"It was first defined at {root}.iter_vars[0].var, and was later re-defined "
                f"at {root}.iter_vars[0].var")
    buf = crash(f"ValueError: TIR is ill-formed, due to multiple definitions of variable t3. "
                f"It was first defined at {root}.alloc_buffers[0], and was later re-defined "
                f"at {root}.alloc_buffers[0]")
    assert bug_id(var) == bug_id(buf) and signature(var) != signature(buf)
    nested = crash(buf["message"].replace("multiple definitions", "multiple nested definitions"))
    assert bug_id(nested) != bug_id(buf)


def test_cache_read_and_cache_write_failing_alike_are_one_bug():
    """cache_read and cache_write substitute the cache buffer with twin mutators of
    cache_read_write.cc: on a buffer a statement declares (T.decl_buffer, or T.alloc_buffer at
    the function's top) both define the cache buffer twice (campaign 6, bugs bf669e33743d and
    f3a046be30b8, the verifier's messages as found). One error through either primitive is one
    bug; the buckets, other primitives and the primitives' wrong results stay apart."""
    root = '<root>.functions[I.GlobalVar("main")].body.block'

    def crash(prim, buf):
        return {"verdict": "fail", "kind": "crash", "stage": "schedule",
                "error_type": "InternalError",
                "message": f"ValueError: TIR is ill-formed, due to multiple nested definitions "
                           f"of variable {buf}. It was first defined at {root}.alloc_buffers[0], "
                           f"and was re-defined at {root}.body.seq[1].buffer",
                "extra": {"failing_step": {"block": "b11", "buffer_index": 0, "func": "main",
                                           "prim": prim, "scope": "local"}}}

    write, read = crash("cache_write", "t2_local"), crash("cache_read", "t1_local")
    assert bug_id(write) == bug_id(read) and signature(write) != signature(read)
    assert "cache_read/cache_write" in bug_key(write)
    assert bug_id(crash("loop_partition", "t1_local")) != bug_id(read)
    other = dict(read, message="ValueError: Invalid use of undefined variable v1 at "
                               f"{root}.body.seq[0].a.")
    assert bug_id(other) != bug_id(read)
    # compute_at and reverse_compute_at are one template: one check there is one bug.
    check = {"verdict": "fail", "kind": "crash", "stage": "schedule",
             "error_type": "InternalError", "message": "Check failed: (x.defined()) is false:",
             "throw_site": "src/s_tir/schedule/primitive/compute_at.cc:300",
             "extra": {"failing_step": {"prim": "compute_at"}}}
    assert bug_id(check) == bug_id(dict(check, extra={"failing_step":
                                                      {"prim": "reverse_compute_at"}}))
    # A death or a hang says nothing of the code: the primitive that made it stays the key's.
    death = {"verdict": "fail", "kind": "signal", "stage": "run", "error_type": "SIGSEGV",
             "message": "killed by SIGSEGV in run",
             "extra": {"failing_step": {"prim": "cache_read"}}}
    assert bug_id(death) != bug_id(dict(death, extra={"failing_step": {"prim": "cache_write"}}))


def test_a_wrong_index_list_a_primitive_left_is_one_bug_however_the_verifier_words_it():
    """reindex rewrites the buffer's accesses outside its block too: an access before the block
    gets the still empty index list ("indexes 1-dimensional buffer with 0 indices"), one after
    it the block's iteration variables ("undefined variable r8 at ...indices"). Campaign 6's
    bugs ecba39d9a726 and acd63edf677b, the messages as found: one bug. An undefined variable
    elsewhere than in an index list, another primitive, or no named rewriter stay apart."""
    root = '<root>.functions[I.GlobalVar("main")].body.block.body'

    def crash(msg, prim="reindex", which="read"):
        return {"verdict": "fail", "kind": "crash", "stage": "schedule",
                "error_type": "InternalError", "message": msg,
                "extra": {"failing_step": {"block": "b9", "buffer": [which, 0], "func": "main",
                                           "prim": prim}}}

    after = crash(f"ValueError: Invalid use of undefined variable r8 at {root}.seq[2].body.body"
                  ".body.body.then_case.then_case.value.false_value.a.a.indices[0]..  While "
                  f"this variable was previously defined at {root}.seq[1].body.body.body.body"
                  ".block.iter_vars[3].var, this definition is no longer in-scope.")
    before = crash(f"ValueError: TIR TensorLoad at {root}.seq[2].body.value.a indexes "
                   "1-dimensional buffer p1_reindex with 0 indices.", which="write")
    assert bug_id(after) == bug_id(before) and signature(after) != signature(before)
    assert "reindex" in bug_key(after)
    # another block's access region (campaign seed 90000, bucket 409c18d02352): the same
    # rewrite, which the signature's collapsed place ("at ...a") no longer shows
    region = crash(f"ValueError: Invalid use of undefined variable j5 at {root}.seq[1].block"
                   ".reads[0].region[0].min.a.")
    assert bug_id(region) == bug_id(after)
    operand = crash(f"ValueError: Invalid use of undefined variable v1 at {root}.seq[0].a.")
    assert bug_id(operand) != bug_id(after)
    assert bug_id(crash(before["message"], prim="transform_layout")) != bug_id(before)
    unnamed = [dict(o, extra={}) for o in (after, before)]
    assert bug_id(unnamed[0]) != bug_id(unnamed[1])


def test_a_death_in_construction_is_the_type_inference_function_s_bug():
    """relax.nn.attention and relax.nn.attention_bias share one FInferType, InferTypeAttention,
    which reads the shape of a tensor whose shape a mutant erased (campaign 6's bugs
    a674810ab3ae and 898823ecbbbe, the outcomes as found): a SIGSEGV while either is
    constructed is one bug. The buckets stay per op; an op with an inference function of its
    own, and another family's op, stay apart."""
    stack = ["tvm/relax/block_builder.py:331 emit", "fuzz/materialize.py:201 _emit_block",
             "fuzz/materialize.py:169 _build_function", "fuzz/materialize.py:220 materialize"]

    def death(op):
        return {"verdict": "fail", "kind": "signal", "stage": "materialize",
                "error_type": "SIGSEGV", "message": "killed by SIGSEGV in materialize",
                "extra": {"op": op, "python_stack": stack}}

    attention, bias = death("relax.nn.attention"), death("relax.nn.attention_bias")
    assert bug_id(attention) == bug_id(bias) and signature(attention) != signature(bias)
    assert "InferTypeAttention" in bug_key(bias)
    assert bug_id(death("relax.nn.conv2d")) not in (bug_id(attention), bug_id(death("relax.exp")))
    assert bug_id(death("relax.exp")) == bug_id(death("relax.nn.relu")) != bug_id(
        death("relax.add"))


def test_inference_families_name_catalogued_ops_once():
    from fuzz.catalogue import CATALOGUE
    from fuzz.signature import INFERENCE_FAMILIES

    listed = [op for ops in INFERENCE_FAMILIES.values() for op in ops]
    assert len(listed) == len(set(listed)) and set(listed) <= set(CATALOGUE)
    assert all(len(ops) > 1 for ops in INFERENCE_FAMILIES.values())


def test_the_rules_read_an_outcome_and_its_json_alike():
    """In-process callers pass the Outcome, stored rows and files pass its JSON: one
    signature, one bug key; to_json() keeps the shape files have (reproduction only when
    set, after the signature) and from_json gives the value back."""
    from fuzz.outcome import Outcome

    o = Outcome("fail", "signal", "schedule", "SIGSEGV", "killed by SIGSEGV in schedule",
                extra={"failing_step": {"prim": "cache_read"},
                       "native_frames": ["tvm::s_tir::CacheRead"]})
    j = o.to_json()
    assert list(j)[-1] == "signature" and "reproduction" not in j
    assert signature(o) == signature(j) == j["signature"] == o.signature
    assert bug_key(o) == bug_key(j) and bug_id(o) == bug_id(j)
    o.reproduction = {"reproduced": 2, "replays": 3}
    assert list(o.to_json())[-2:] == ["signature", "reproduction"]
    assert Outcome.from_json(o.to_json()) == o and o.signature == j["signature"]


def test_a_wrong_output_returned_through_a_helper_is_named_by_its_op():
    """A difference in an output a helper function made names the helper's op (it was
    `call:float32` before, which says nothing), through tuples and their items too."""
    from fuzz.model import Block, Function, Node, Param, Program, TensorTy
    from fuzz.reference import numeric_key

    t = TensorTy([4], "float32")
    helper = Function("helper", [Param("a", t)],
                      [Block(True, [Node("e", "relax.exp", ["a"], {}, t),
                                    Node("s", "relax.sin", ["a"], {}, t),
                                    Node("r", "tuple", ["e", "s"])])], "r")
    main = Function("main", [Param("x", t)],
                    [Block(True, [Node("c", "call", ["x"], {"func": "helper"}),
                                  Node("i1", "get_item", ["c"], {"index": 1}, t),
                                  Node("n", "relax.negative", ["x"], {}, t),
                                  Node("out", "tuple", ["i1", "n", "x"])])], "out")
    prog = Program([main, helper], "main", {})
    assert [numeric_key(prog, i) for i in range(3)] == \
        ["relax.sin:float32", "relax.negative:float32", "param"]


def test_an_onnx_converter_refusing_a_dtype_is_one_bug_whatever_the_dtype():
    """Campaign seed 110000: EyeLike's converter refused int64, float32 and float64 inputs
    with the dtype in the message: three bug keys for one converter's one defect."""
    base = {"verdict": "fail", "kind": "crash", "stage": "import", "error_type": "ValueError",
            "extra": {"converter": "EyeLike._impl_v9"}}
    keys = {bug_key(dict(base, message=f"dtype mismatch between input ({d}) and attribute (1)"))
            for d in ("int64", "float32", "float64")}
    assert len(keys) == 1, keys
    typed = dict(base, kind="shape_inference", extra={})   # no converter named: the
    assert len({bug_key(dict(typed, message=f"output 0: declared dtype {d}, onnxruntime "
                             "gives float32")) for d in ("int64", "float64")}) == 2   # dtypes say which
    build = dict(base, stage="build")   # elsewhere a dtype in a message stays: other bugs
    assert len({bug_key(dict(build, message=f"no lowering for {d}"))
                for d in ("int64", "float32")}) == 2


def test_operand_shapes_quoted_in_a_message_do_not_split_a_bug():
    """Campaign 130000: ONNX Selu's float32 constant subtracted from a float16 input, met with
    a (3, 1) and a 0-d input, was filed as two bugs; the quoted types' shapes differ only."""
    from fuzz.signature import bug_key

    def selu(shape):
        return {"verdict": "fail", "kind": "crash", "stage": "import", "error_type": "TypeError",
                "throw_site": "src/relax/op/op_common.h:334",
                "extra": {"converter": "Selu._impl_v1"},
                "message": "Binary operators must have the same datatype for both operands.  "
                           "However, R.subtract(R.const(1.0, \"float32\"), lv7) uses datatype "
                           "T.float32 on the LHS (Type of R.Tensor((), dtype=\"float32\")), and "
                           "datatype T.float16 on the RHS (Type of R.Tensor(" + shape
                           + ", dtype=\"float16\"))."}
    assert bug_key(selu("()")) == bug_key(selu("(3, 1)")) == bug_key(selu("(n, (m + 2))"))
    other = selu("()")
    other["extra"] = {"converter": "Elu._impl_v1"}
    assert bug_key(other) != bug_key(selu("()"))


def test_an_onnx_converter_quoting_its_graph_types_is_one_bug_whatever_the_types():
    """Campaign on 0.25 (seed 250000): Concat refusing a tuple that holds a PrimValue was
    three bugs, one per tuple it met; a build-stage message keeps its types."""
    from fuzz.signature import bug_key

    base = {"verdict": "fail", "kind": "crash", "stage": "import", "error_type": "TypeError",
            "throw_site": "src/relax/op/op_common.cc:102",
            "extra": {"converter": "Concat._impl_v13"}}
    given = ("R.Tuple(R.Prim(value=1))", "R.Tuple(R.Prim(value=n), R.Tensor((3,), "
             "dtype=\"int64\"))", "R.Tuple(R.Prim(value=2), R.Tensor((n, (m + 1)), dtype=\"f\"))")
    msgs = [f"Op(relax.concat) expects the input to be a Tuple of Tensors. However, the given "
            f"input is {g}" for g in given]
    assert len({bug_key(dict(base, message=m)) for m in msgs}) == 1
    assert "R.Tuple(...)" in bug_key(dict(base, message=msgs[1]))
    build = dict(base, stage="build", extra={})
    assert len({bug_key(dict(build, message=m)) for m in msgs}) > 1


def test_the_expression_class_a_converter_met_does_not_split_its_bug():
    """The 0.25 campaign filed ConstantOfShape._impl_v9's len() of a non-constant shape twice:
    "object of type 'Call'" (a Shape node's result) and "'Var'" (an initializer kept as input)."""
    def imp(msg, conv="ConstantOfShape._impl_v9"):
        return {"verdict": "fail", "kind": "crash", "stage": "import", "error_type": "TypeError",
                "message": msg, "throw_site": "", "extra": {"converter": conv}}

    a, b = imp("object of type 'Call' has no len()"), imp("object of type 'Var' has no len()")
    assert bug_key(a) == bug_key(b)
    assert bug_key(a) != bug_key(imp("object of type 'Call' has no len()", "Expand._impl_v13"))


def test_a_frontend_cases_wrong_op_is_one_bug_whatever_its_dtype():
    """Campaign 150000 filed the PyTorch importer's selu (decomposed without its scale) as
    three bugs, one per dtype. A Relax program's wrong op keeps its dtype (a float16
    legalization is its own bug)."""
    def num(key, **extra):
        return {"verdict": "fail", "kind": "numeric", "stage": "compare", "error_type": "",
                "message": "output 0 (float32): 1/1 differ", "throw_site": "",
                "extra": {"numeric_key": key, **extra}}

    torch = {"torch": {"decompose": False}}
    assert bug_key(num("relax.nn.selu:float16", **torch)) == \
        bug_key(num("relax.nn.selu:float64", **torch))
    assert bug_key(num("relax.nn.selu:float16", onnx={"opset": 11})) == \
        bug_key(num("relax.nn.selu:float32", onnx={"opset": 18}))
    assert bug_key(num("relax.nn.selu:float16")) != bug_key(num("relax.nn.selu:float64"))
    assert bug_key(num("relax.exp:float32", **torch)) != bug_key(num("relax.nn.selu:float32",
                                                                     **torch))


def test_a_gpu_primfunc_left_on_the_host_is_one_bug_whichever_op_and_target():
    def o(name, kind):
        return _o(f"PrimFunc {name} for {kind} binds no GPU thread: built as host code that "
                  "reads device memory", site="", kind="gpu_host_code", error_type="",
                  extra={"failing_pass": "tirx.SplitHostDevice"})

    assert signature(o("index_put", "cuda")) != signature(o("take_backward", "webgpu"))
    assert bug_id(o("index_put", "cuda")) == bug_id(o("take_backward", "webgpu"))


def test_an_import_crash_a_wrong_declared_dtype_caused_is_that_dtype_finding_s_bug():
    """ONNX OneHot declared float64 (relax.one_hot) where onnxruntime gives float32: as the
    graph's output it is a dtype finding; met by a later Mul it is an import crash in Mul's
    converter, whose origin worker.onnx_judge.dtype_origin names (extra["dtype_op"]). One bug,
    whatever the crash's throw site and converter; a crash without dtype_op keeps its own."""
    finding = {"verdict": "fail", "kind": "shape_inference", "stage": "import", "error_type": "",
               "message": "output 0: declared dtype float64, onnxruntime gives float32",
               "extra": {"dtype_op": "relax.one_hot"}}
    crash = _o("Binary operators must have the same datatype for both operands.  However, "
               "R.multiply(p3, lv5) uses datatype T.float32 on the LHS (Type of R.Tensor((3,), "
               'dtype="float32")), and datatype T.float64 on the RHS (Type of R.Tensor((3, 2), '
               'dtype="float64")).', site="src/relax/op/op_common.h:334", stage="import",
               error_type="TypeError",
               extra={"converter": "Mul._impl_v7", "dtype_op": "relax.one_hot"})
    assert signature(crash) != signature(finding)
    assert bug_key(crash) == bug_key(finding) == \
        "shape_inference | import | declared dtype changed by relax.one_hot"
    other = dict(crash, extra={"converter": "Mul._impl_v7"})
    assert bug_id(other) != bug_id(crash) and "[converter Mul._impl_v7]" in bug_key(other)


def test_a_torch_refusal_s_unsupported_names_are_one_converter_in_any_order():
    """TVM's torch importer lists the functions it has no converter for from a set: the same
    case gave ['sort.stable', 'bitwise_right_shift.Tensor'] once and the other order on
    replays (reproduced 1/3). The converter named in the signature is the sorted list."""
    from worker.torch_judge import converter_frame

    def refusal(names):
        src = ("def _check_unsupported_func_type():\n"
               f"    raise AssertionError({'Unsupported function types ' + str(names)!r})\n")
        ns: dict = {}
        exec(compile(src, "/site/tvm/relax/frontend/torch/base_fx_graph_translator.py",
                     "exec"), ns)
        try:
            ns["_check_unsupported_func_type"]()
        except AssertionError as e:
            return e

    a = converter_frame(refusal(['sort.stable', 'bitwise_right_shift.Tensor']))
    b = converter_frame(refusal(['bitwise_right_shift.Tensor', 'sort.stable']))
    assert a == b == "unsupported bitwise_right_shift.Tensor, sort.stable"


def test_a_convolution_declaring_another_dtype_is_one_bug_whatever_its_rank():
    """TVM's PyTorch importer writes out_dtype="float32" into each of its convolution
    converters: float64 conv1d_transpose, conv2d and conv3d came back as three bugs. One key
    for the family; other ops keep their own."""
    def o(op):
        return {"verdict": "fail", "kind": "shape_inference", "stage": "import",
                "error_type": "", "message": "output 1: declared dtype float32, eager PyTorch "
                "gives float64", "extra": {"dtype_op": op, "torch": {}}}

    convs = {bug_id(o(f"relax.nn.conv{r}d{t}")) for r in (1, 2, 3) for t in ("", "_transpose")}
    assert len(convs) == 1
    assert bug_id(o("relax.matmul")) not in convs and bug_id(o("relax.nn.conv2d_backward")) \
        not in convs
