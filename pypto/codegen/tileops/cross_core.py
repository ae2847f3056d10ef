"""Emitters of the cross-core family: the pipe of a Group's halves (the push is a
statement, emitted by the kernel codegen's `tpush`)."""
from __future__ import annotations

from pypto.codegen.tileops import emits


@emits("tile.tpop")
def tpop(k, v, c, span):
    k.tpop(v, c, span)


@emits("tile.aiv_shard", "tile.aic_gather")
def lane_crossing(k, v, c, span):        # ExpandMixedKernel made it a push and a pop
    from pypto.codegen.common import fail
    fail(f"{c.op} reached a kernel of one core: it crosses between the cube and the vector cores "
         f"of a mixed kernel", span, "run the pass pipeline (ExpandMixedKernel)")
