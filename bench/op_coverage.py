"""Which legalizable Relax ops the op catalogue covers.

    python bench/op_coverage.py

Prints the installed TVM's Relax ops that have an ``FLegalize`` attribute (the ops LegalizeOps
can lower), how many the catalogue has a spec for, and the ones it lacks.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tvm  # noqa: E402

from fuzz.catalogue import CATALOGUE  # noqa: E402


def main():
    names = [n for n in tvm.ir.Op.list_op_names() if n.startswith("relax.")]
    legal = sorted(n for n in names if tvm.ir.Op.get(n).get_attr("FLegalize") is not None)
    covered = [n for n in legal if n in CATALOGUE]
    print(f"TVM {tvm.__version__}: {len(names)} Relax ops, {len(legal)} with FLegalize, "
          f"{len(covered)} in the catalogue")
    print("catalogued without FLegalize (lowered by other passes):",
          sorted(set(CATALOGUE) - set(legal)))
    print("legalizable, not catalogued:")
    for n in legal:
        if n not in CATALOGUE:
            print("  " + n)


if __name__ == "__main__":
    main()
