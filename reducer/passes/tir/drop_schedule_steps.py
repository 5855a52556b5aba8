from __future__ import annotations

from ..base import TirPass


class DropScheduleSteps(TirPass):
    """Steps of the recorded schedule."""

    name = "tir-drop-schedule-steps"
    measures = ("schedule_steps",)

    def targets(self, prog):
        steps = (prog.meta.get("schedule") or {}).get("applied") or []
        return [[i, s.get("prim")] for i, s in enumerate(steps)]

    def edit(self, prog, chosen):
        sched = prog.meta["schedule"]
        drop = {c[0] for c in chosen}
        sched["applied"] = [s for i, s in enumerate(sched["applied"]) if i not in drop]
        if not sched["applied"]:
            del prog.meta["schedule"]
        return True
