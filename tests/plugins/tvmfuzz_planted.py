"""A planted bug for the smoke-mode test: a Relax pass that crashes on a common pattern (a
function returning a tuple), the way a buggy pass in a TVM fork would."""
import tvm
from tvm import relax


@tvm.transform.module_pass(opt_level=0, name="PlantedCrashOnTuple")
def crash_on_tuple(mod, ctx):
    for gv, func in mod.functions.items():
        if isinstance(func, relax.Function) and isinstance(func.ret_ty, relax.TupleType):
            raise RuntimeError(f"planted bug: PlantedCrashOnTuple met {gv.name_hint}")
    return mod


@tvm.transform.module_pass(opt_level=0, name="PlantedIllFormed")
def make_ill_formed(mod, ctx):
    """Returns a main that uses a variable nothing defines: ill-formed Relax."""
    main = mod["main"]
    stray = relax.Var("stray", main.ret_ty)
    body = relax.SeqExpr([], stray)
    return tvm.IRModule({**{gv: f for gv, f in mod.functions.items() if gv.name_hint != "main"},
                         mod.get_global_var("main"): relax.Function(main.params, body,
                                                                    main.ret_ty, main.is_pure,
                                                                    main.attrs)})


@relax.expr_functor.mutator
class _AddToSub(relax.PyExprMutator):
    def visit_call_(self, call):
        call = super().visit_call_(call)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.add":
            return relax.op.subtract(call.args[0], call.args[1])
        return call


@tvm.transform.module_pass(opt_level=0, name="PlantedAddToSub")
def add_to_sub(mod, ctx):
    """A miscompiling pass: every relax.add becomes relax.subtract."""
    for gv, func in list(mod.functions.items()):
        if isinstance(func, relax.Function):
            mod[gv] = _AddToSub(mod).visit_expr(func)
    return mod
