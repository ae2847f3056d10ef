"""A @pl.jit entry whose pl.at region carries its own name (test_ops_hint_name)."""
import pypto.language as pl


@pl.jit
def scale_rows(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale_rows"):
        out[:] = pl.mul(a, a)
    return out
