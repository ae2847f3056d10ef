"""Emitters of the cross-core family: the pipe of a Group's halves (the push is a
statement, emitted by the kernel codegen's `tpush`)."""
from __future__ import annotations

from pypto.codegen.tileops import emits


@emits("tile.tpop")
def tpop(k, v, c, span):
    k.tpop(v, c, span)
