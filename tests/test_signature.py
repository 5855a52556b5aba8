from worker.signature import normalize_message, signature, signature_id


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
