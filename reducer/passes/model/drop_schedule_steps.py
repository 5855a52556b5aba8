from __future__ import annotations

from ..base import ModelPass
from .helpers import variants


class DropScheduleSteps(ModelPass):
    """Steps of a "scheduled" variant's pinned schedule (``schedule_steps``: the reducer
    replaces the seed's draw with the steps the finding applied before it starts)."""

    name = "drop_schedule_steps"
    measures = ("schedule_steps",)

    def targets(self, prog):
        return [(i, j, s.get("prim")) for i, v in enumerate(variants(prog))
                for j, s in enumerate(v.get("schedule_steps") or [])]

    def edit(self, prog, chosen):
        vs = variants(prog)
        drop = {(i, j) for i, j, _ in chosen}
        for i, v in enumerate(vs):
            if v.get("schedule_steps"):
                v["schedule_steps"] = [s for j, s in enumerate(v["schedule_steps"])
                                       if (i, j) not in drop]
        return True
