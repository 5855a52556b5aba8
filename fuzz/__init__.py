"""tvmfuzz generators: the program model, the op catalogue, and the Relax generator."""

# Bump when a change to the generator or catalogue changes which program a seed gives:
# a case is reproducible from (seed, GENERATOR_VERSION).
GENERATOR_VERSION = 4   # 2: control flow (fuzz.control); 3: repeated layers (fuzz.motifs),
#                           static match_cast views (fuzz.dynshape); 4: the vision ops and
#                           nll_loss_backward, dynamic_strided_slice (fuzz.dynshape.gen_slice),
#                           scans on the last axis
