from __future__ import annotations

from ..base import ModelPass


class SimplifyOnnx(ModelPass):
    """An ONNX case's export and import options off (fuzz/onnx_export.OnnxOptions): no
    initializers, no dynamic input, shapes as constants, no kept parameters or shape dict,
    where the failure stays without them. The opset stays: the failure may be its."""

    name = "simplify_onnx"
    measures = ("onnx_options",)

    def targets(self, prog):
        options = prog.meta.get("onnx") or {}
        return sorted(k for k, v in options.items() if k != "opset" and v is True)

    def edit(self, prog, chosen):
        options = prog.meta.get("onnx") or {}
        for k in chosen:
            options[k] = False
        if not options.get("weights"):
            options["weights_as_inputs"] = False   # meaningless without initializers
        prog.meta["onnx"] = options
        return True
