"""Which legalizable Relax ops the op catalogue covers.

    python bench/op_coverage.py

Prints the installed TVM's Relax ops that have an ``FLegalize`` attribute (the ops LegalizeOps
can lower), how many the catalogue has a spec for, how many more the generator reaches through
structural nodes (``fuzz.model.STRUCTURAL_REACHES``: ``dyn_slice``, ``shape_tensor``), and the
ones neither covers.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tvm  # noqa: E402

from fuzz.catalogue import CATALOGUE  # noqa: E402
from fuzz.model import STRUCTURAL_REACHES  # noqa: E402


def main():
    names = [n for n in tvm.ir.Op.list_op_names() if n.startswith("relax.")]
    legal = sorted(n for n in names if tvm.ir.Op.get(n).get_attr("FLegalize") is not None)
    covered = [n for n in legal if n in CATALOGUE]
    reached = {op: node for node, ops in STRUCTURAL_REACHES.items() for op in ops}
    structural = [n for n in legal if n not in CATALOGUE and n in reached]
    print(f"TVM {tvm.__version__}: {len(names)} Relax ops, {len(legal)} with FLegalize, "
          f"{len(covered)} in the catalogue, {len(structural)} more through structural nodes "
          f"({', '.join(f'{n} ({reached[n]})' for n in structural)}): "
          f"{len(covered) + len(structural)} covered")
    print("catalogued without FLegalize (lowered by other passes):",
          sorted(set(CATALOGUE) - set(legal)))
    print("legalizable, not covered:")
    for n in legal:
        if n not in CATALOGUE and n not in reached:
            print("  " + n)


if __name__ == "__main__":
    main()
