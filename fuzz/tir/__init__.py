"""TIR PrimFunc fuzzing: the model (``model``), generator (``generate``), TVMScript renderer
(``render``), numpy reference (``reference``) and the TVM seam (``build``).

Only ``build`` imports TVM; the rest is plain Python and numpy, so cases stay data."""

# Bump when a change to the TIR generator changes which program a seed gives.
TIR_GENERATOR_VERSION = 1
