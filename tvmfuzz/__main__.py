"""``python -m tvmfuzz``: the same as the ``tvmfuzz`` command."""
from tvmfuzz.cli import main

raise SystemExit(main())
