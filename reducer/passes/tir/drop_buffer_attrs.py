from __future__ import annotations

from ..base import TirPass
from .helpers import BUFFER_DEFAULTS, buffers, layout_attrs


class DropBufferAttrs(TirPass):
    """Layout attributes one at a time: strides, elem_offset, offset_factor, scope,
    axis_separators; a match_buffer parameter becomes a plain T.Buffer."""

    name = "tir-drop-buffer-attrs"
    measures = ("buffer_attrs",)

    def targets(self, prog):
        return layout_attrs(prog)

    def edit(self, prog, chosen):
        bufs = {b.name: b for b in buffers(prog)}
        for name, attr in chosen:
            b = bufs[name]
            if attr == "how":
                b.how = "param"
            else:
                setattr(b, attr, dict(BUFFER_DEFAULTS)[attr])
        return True
