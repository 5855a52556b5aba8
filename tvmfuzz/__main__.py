"""``python -m tvmfuzz``: the same as the ``tvmfuzz`` command."""
import os
import sys

# ``python -m`` puts the working directory first on sys.path. Run from a directory that holds
# a folder named like one of tvmfuzz's packages (a store called ``corpus``, say), that folder
# would shadow the package; outside a checkout of tvmfuzz the working directory has nothing
# of tvmfuzz to offer, so it goes.
_here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) != _here:
    del sys.path[0]

from tvmfuzz.cli import main  # noqa: E402

raise SystemExit(main())
