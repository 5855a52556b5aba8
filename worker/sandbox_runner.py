"""How a campaign runs one case: through the crash-isolated sandbox when it is available,
so a case that kills its process becomes a finding instead of ending the campaign."""
from __future__ import annotations


class InProcessRunner:
    """Runs cases in this process: only for debugging, a crash takes the campaign down."""

    def __call__(self, prog) -> dict:
        from .execute import compile_and_run

        return compile_and_run(prog, input_seed=prog.meta.get("seed") or 0).to_json()


def default_runner():
    return InProcessRunner()
