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
