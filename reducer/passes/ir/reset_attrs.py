from __future__ import annotations

import dataclasses

from ..base import IRPass
from .helpers import bindings, rebuild, relax_functions, tvm_api


class ResetAttrs(IRPass):
    """Operator attributes back to their declared defaults."""

    name = "reset_attrs"
    measures = ("text",)

    def targets(self, mod):
        _, _, relax, _ = tvm_api()
        out = []
        for gv, f in relax_functions(mod):
            for i, b in enumerate(bindings(f)):
                v = b.value
                if not isinstance(v, relax.Call) or v.attrs is None:
                    continue
                for fld in _attr_fields(v.attrs):
                    d = _default(fld)
                    if d is dataclasses.MISSING:
                        continue
                    try:
                        cur = getattr(v.attrs, fld.name)
                        if cur == d or (cur is None and d is None):
                            continue
                    except Exception:  # noqa: BLE001
                        continue
                    out.append((gv.name_hint, i, fld.name))
        return out

    def edit(self, mod, chosen):
        tvm, _, relax, _ = tvm_api()
        updates = {}
        for gv, f in relax_functions(mod):
            mine = [(i, name) for fn, i, name in chosen if fn == gv.name_hint]
            if not mine:
                continue
            bs = bindings(f)
            values = {}
            for i in sorted({i for i, _ in mine}):
                call = bs[i].value
                info = type(call.attrs).__tvm_ffi_type_info__
                fields = {fld.name: getattr(call.attrs, fld.name)
                          for fld in _attr_fields(call.attrs)}
                for j, name in mine:
                    if j == i:
                        fld = next(x for x in _attr_fields(call.attrs) if x.name == name)
                        fields[name] = _default(fld)
                attrs = tvm.ir.make_node(info.type_key, **fields)
                values[bs[i].var] = relax.Call(call.op, call.args, attrs, call.ty_args)
            updates[gv] = rebuild(f, values=values)
        return self.finish(mod, updates)


def _attr_fields(attrs) -> list:
    info = getattr(type(attrs), "__tvm_ffi_type_info__", None)
    fields = []
    while info is not None:
        fields = list(info.fields) + fields
        info = info.parent_type_info
    return fields


def _default(field):
    if not getattr(field, "c_has_default", False):
        return dataclasses.MISSING
    d = field.c_default
    return dataclasses.MISSING if d is dataclasses.MISSING or repr(d) == "<MISSING>" else d
