"""TVM 0.27 defects that random s_tir schedules meet, as minimal reproductions (data only: no
TVM import). worker/schedule_steps.py uses them (STABLE_PRIMITIVES), worker/schedule_standard.py
re-exports them next to the modules they run on (the self-check test); fuzz/triage.py names a
finding that matches one as ``known``.
"""
from __future__ import annotations


# A crash entry's "site" (optional) is the source file of the check that fails: the same check
# there, raised while DLight's default schedule or another primitive sharing the code (compute_at
# and reverse_compute_at) runs it, is the same defect.
# Each is a schedule on STANDARD[module]; "expect" is what TVM does: "mismatch" (wrong results),
# "crash: <first line>" (an exception while scheduling), "memory" (an out-of-bounds access at
# run time: heap corruption, a signal, or wrong results, depending on the heap). Campaigns keep
# generating all of them; STABLE_PRIMITIVES leaves out the primitives they blame, for tests
# that want schedules TVM gets right.
def _s(prim, block, **kw):
    return {"func": "matmul", "prim": prim, "block": block, **kw}


KNOWN_BUGS = [
    {"id": "loop_partition-reduction-init", "blame": "loop_partition",
     "module": "matmul", "expect": "mismatch",
     "note": "loop_partition of a reduction loop copies the block's T.init into every "
             "partition, so each partition restarts the accumulation",
     "steps": [_s("loop_partition", "C", loop=2, factors=[None, 6], preserve_unit_iters=True)]},
    {"id": "loop_partition-segfault", "blame": "loop_partition",
     "module": "matmul", "expect": "signal",
     "note": "loop_partition of the init block's loop after decompose_reduction: SIGSEGV in "
             "tvm::s_tir::LoopPartition",
     "steps": [_s("decompose_reduction", "C", loop=2),
               _s("loop_partition", "C_init", loop=1, factors=[2, None],
                  preserve_unit_iters=True)]},
    {"id": "rfactor-drops-predicate", "blame": "rfactor", "module": "matmul", "expect": "memory",
     "note": "rfactor of a block under an imperfect split drops T.where in the write-back "
             "block: writes C[16..27, :] out of bounds",
     "steps": [_s("split", "C", loop=0, factors=[4, None, 7], preserve_unit_iters=True,
                  disable_predication=False),
               _s("rfactor", "C", loop=4, factor_axis=1)]},
    {"id": "rfactor-after-reverse_compute_at", "blame": "rfactor", "module": "matmul",
     "expect": "crash: Check failed: block_realize == old_block_realize_.get()",
     "site": "src/s_tir/schedule/primitive/reduction.cc",
     "note": "rfactor of a reduction whose loop nest holds another block: InternalError "
             "instead of a ScheduleError",
     "steps": [_s("reverse_compute_at", "D", target="C", loop=1, preserve_unit_loops=False,
                  index=-2),
               _s("rfactor", "C", loop=2, factor_axis=1)]},
    {"id": "vectorize-over-reduction", "blame": "vectorize",
     "module": "matmul", "expect": "mismatch",
     "note": "a vectorized loop over a serial reduction loop and its epilogue block computes "
             "wrong values",
     "steps": [_s("reverse_compute_at", "D", target="C", loop=1, preserve_unit_loops=False,
                  index=-1),
               _s("vectorize", "D", loop=1)]},
    {"id": "reverse_compute_at-before-consumer", "blame": "reverse_compute_at",
     "module": "matmul", "expect": "mismatch",
     "note": "reverse_compute_at moves a block below the loop of its consumer's consumer; "
             "the cache block then reads C before it is computed (no ScheduleError)",
     "steps": [_s("cache_read", "D", buffer_index=0, scope="global"),
               _s("reverse_compute_at", "C", target="D", loop=1, preserve_unit_loops=False,
                  index=-2)]},
    {"id": "pad_einsum-after-compute_at", "blame": "pad_einsum",
     "module": "matmul", "expect": "memory",
     "note": "pad_einsum pads the loop that compute_at made shared with D; D then writes "
             "D[:, 8..15] out of bounds",
     "steps": [_s("compute_at", "C", target="D", loop=1, preserve_unit_loops=False, index=-2),
               _s("pad_einsum", "C", padding=[1, 16, 1])]},
    {"id": "blockize-reverse_compute_inline", "blame": "blockize", "module": "matmul",
     "expect": "crash: unordered_map::at",
     "note": "std::out_of_range escapes reverse_compute_inline after blockize",
     "steps": [_s("blockize", "C", loop=0, preserve_unit_iters=True),
               _s("reverse_compute_inline", "D")]},
    {"id": "reindex-after-decompose_reduction", "blame": "reindex", "module": "matmul",
     "expect": "crash: Check failed: (outer->body.get() == inner) is false",
     "note": "reindex of the init block made by decompose_reduction",
     "steps": [_s("decompose_reduction", "C", loop=1), _s("reindex", "C_init",
                                                          buffer=["write", 0])]},
    {"id": "fuse_reduction_epilogue-reordered-iters", "blame": "fuse_reduction_epilogue",
     "module": "matmul", "expect": "mismatch",
     "note": "after reorder_block_iter_var on the epilogue, the fused init writes D[vj, vi] "
             "while the update writes D[vi, vj]",
     "steps": [_s("reorder_block_iter_var", "D", order=[1, 0]),
               _s("fuse_reduction_epilogue", "C", target="D")]},
    {"id": "fuse_reduction_epilogue-transformed-layout", "blame": "fuse_reduction_epilogue",
     "module": "matmul",
     "expect": "crash: Check failed: buffer->shape.size() == indices.size()",
     "note": "fuse_reduction_epilogue indexes D with the transformed intermediate's indices",
     "steps": [_s("transform_layout", "C", buffer=["write", 0],
                  map={"kind": "split", "axis": 1, "factor": 4}),
               _s("fuse_reduction_epilogue", "C", target="D")]},
    {"id": "compute_at-fused-layout", "blame": "transform_layout", "module": "matmul",
     "expect": "crash: Check failed: (var.has_value()) is false: TensorRegion pattern match failed",
     "site": "src/s_tir/schedule/primitive/compute_at.cc",
     "note": "compute_at after transform_layout fused the consumer's read: a ValueError from "
             "an internal check instead of a ScheduleError",
     "steps": [_s("transform_layout", "D", buffer=["read", 0],
                  map={"kind": "fuse", "shape": [16, 8]}),
               _s("compute_at", "C", target="D", loop=0, preserve_unit_loops=False, index=-1)]},
    {"id": "cache_write-region-ignores-predicate", "blame": "cache_write", "module": "matmul",
     "expect": "memory",
     "note": "after two splits (one imperfect) and a fuse, D's predicate reads "
             "(fused // 4 + 0) < 4; cache_write sizes D_global and its write-back loop by the "
             "fused extent (32 rows) and writes D[16..31, :] out of bounds",
     "steps": [_s("split", "D", loop=0, factors=[4, None], preserve_unit_iters=True,
                  disable_predication=False),
               _s("split", "D", loop=0, factors=[8, None], preserve_unit_iters=True,
                  disable_predication=False),
               _s("fuse", "D", loops=[0, 1, 2], preserve_unit_iters=True),
               _s("cache_write", "D", buffer_index=0, scope="global")]},
    {"id": "reorder-mixed-spatial-reduction-loop", "blame": "fuse", "module": "relax_mm_add",
     "expect": "mismatch",
     "note": "fuse of the spatial loop i1 with the reduction loop k, split, then reorder of the "
             "split parts: reorder accepts it, yet the first iteration of some outputs is no "
             "longer the one with v_k == 0, so T.init runs after partial sums",
     "steps": [{"func": "matmul", "prim": "fuse", "block": "matmul", "loops": [1, 2],
                "preserve_unit_iters": False},
               {"func": "matmul", "prim": "split", "block": "matmul", "loop": 1,
                "factors": [24, None, 6], "preserve_unit_iters": True,
                "disable_predication": False},
               {"func": "matmul", "prim": "reorder", "block": "matmul", "loops": [0, 2, 1]}]},
    {"id": "decompose_reduction-unbound-predicated-loop", "blame": "add_unit_loop",
     "module": "relax_mm_add", "expect": "mismatch",
     "note": "a unit loop split imperfectly gives a loop bound to no block var and a predicate "
             "on it; decompose_reduction puts the init block under that loop without the "
             "predicate, so the init runs 7 times and zeroes the sum after the update",
     "steps": [{"func": "matmul", "prim": "add_unit_loop", "block": "matmul", "loop": 2},
               {"func": "matmul", "prim": "split", "block": "matmul", "loop": 2,
                "factors": [7, None, 2], "preserve_unit_iters": True,
                "disable_predication": False},
               {"func": "matmul", "prim": "decompose_reduction", "block": "matmul", "loop": 4}]},
]

