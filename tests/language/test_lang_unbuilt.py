"""Names of the reference language this pypto does not build yet are refused as such, at
the user's line, with why and what to write instead (not as unknown operators)."""
from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.errors import NotBuiltError, UnknownOpError

SRC = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        {LINE}
        return pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)
"""


@pytest.mark.parametrize("line, why", [
    ("x = pl.matmul_mx(a, a)", r"pl.matmul_mx: MX-scaled matmuls"),
])
def test_not_built_names_say_so(line, why):
    with pytest.raises(NotBuiltError, match=why) as e:
        pl.parse(SRC.format(LINE=line), filename="/u/p.py")
    assert e.value.span.line == 8 and "not supported by this pypto yet" in str(e.value)
    assert e.value.hint


def test_a_misspelt_operator_is_still_unknown():
    with pytest.raises(UnknownOpError, match=r"pl.prefetchh is not an operator"):
        pl.parse(SRC.format(LINE="x = pl.prefetchh(a)"), filename="/u/p.py")
