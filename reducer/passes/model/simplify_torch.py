from __future__ import annotations

from ..base import ModelPass


class SimplifyTorch(ModelPass):
    """A PyTorch case's export and import options back to their defaults
    (fuzz/torch_export.TorchOptions): no weights, no dynamic dims beyond the program's own,
    no ``run_decompositions()``, the importer's flags as ``from_exported_program``'s defaults,
    where the failure stays with them."""

    name = "simplify_torch"
    measures = ("torch_options",)

    def targets(self, prog):
        from fuzz.torch_export import TorchOptions

        default = TorchOptions().to_json()
        options = prog.meta.get("torch") or {}
        return sorted(k for k, v in options.items() if k in default and v != default[k])

    def edit(self, prog, chosen):
        from fuzz.torch_export import TorchOptions

        default = TorchOptions().to_json()
        options = dict(prog.meta.get("torch") or {})
        for k in chosen:
            options[k] = default[k]
        if not options.get("weights"):
            options["keep_params_as_input"] = False   # meaningless without weights
        prog.meta["torch"] = options
        return True
