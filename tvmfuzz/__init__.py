"""The ``tvmfuzz`` command line: the top layer, the only package that imports all the others
(fuzz: model, catalogue, generation; worker: execution, campaigns; corpus; reducer)."""
