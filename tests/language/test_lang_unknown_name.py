"""A name the language does not have is an unknown operator at the user's line, with the
closest one it has."""
from __future__ import annotations

import pytest

import pypto.language as pl
from pypto.errors import UnknownOpError

SRC = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        {LINE}
        return pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)
"""


def test_a_misspelt_operator_is_still_unknown():
    with pytest.raises(UnknownOpError, match=r"pl.prefetchh is not an operator"):
        pl.parse(SRC.format(LINE="x = pl.prefetchh(a)"), filename="/u/p.py")
