from __future__ import annotations

from ..base import ModelPass
from .helpers import variants


class ShortenPasses(ModelPass):
    """Drop passes from a recorded pass sequence (``pipeline: passes``) and extra passes."""

    name = "shorten_passes"
    measures = ("variants",)
    lists = ("passes", "extra_passes")

    def targets(self, prog):
        return [(key, i, j) for key in self.lists for i, v in enumerate(variants(prog))
                for j in range(len(v.get(key) or []))]

    def edit(self, prog, chosen):
        drop = set(chosen)
        for i, v in enumerate(variants(prog)):
            for key in self.lists:
                if v.get(key):
                    v[key] = [p for j, p in enumerate(v[key]) if (key, i, j) not in drop]
            if v.get("pipeline") == "passes" and not v.get("passes"):
                v["pipeline"] = "default"
        return True
