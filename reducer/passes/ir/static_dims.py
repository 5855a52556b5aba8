from __future__ import annotations

from ..base import IRPass
from .helpers import entry, rebuild, tvm_api


class StaticDims(IRPass):
    """Make main's symbolic dims static, with the values the script judge binds them to."""

    name = "static_dims"
    measures = ("text",)

    def targets(self, mod):
        _, _, relax, _ = tvm_api()
        f = entry(mod)[1]
        names = []
        for p in f.params:
            for v in relax.analysis.tir_vars_in_type(p.ty):
                if v.name not in names:
                    names.append(v.name)
        return names

    def edit(self, mod, chosen):
        tvm, _, relax, _ = tvm_api()
        gv, f = entry(mod)
        env = script_env(mod)
        f = f.bind_symbolic_vars({n: tvm.tirx.IntImm("int64", env.get(n, 1)) for n in chosen})
        return self.finish(mod, {gv: rebuild(f)})


def script_env(mod, input_seed: int = 0) -> dict:
    """Symbolic dim values as worker.script_inputs binds them (worker.cases judging a TVMScript case) for this module."""
    import numpy as np

    from fuzz import dims as D
    from fuzz.inputs import make_array
    from fuzz.materialize import sinfo_to_ty

    rng = np.random.default_rng(input_seed)
    env: dict = {}
    try:
        for p in entry(mod)[1].params:
            ty = sinfo_to_ty(p.ty)
            for d in ty.shape or []:
                for v in (D.free_vars(d) if isinstance(d, str) else []):
                    env.setdefault(v, int(rng.integers(1, 5)))
            make_array(ty, -2, 2, env, rng)
    except Exception:  # noqa: BLE001 - values past this point are a guess
        pass
    return env
