"""A @pl.jit entry with a @pl.jit.inline dependency (its own file: jit reads the source)."""
import pypto.language as pl


@pl.jit.inline
def axpy(x: pl.Tensor, y: pl.Tensor, alpha: pl.FP32):
    # the statement below is line 9: its location must survive inlining
    # (a test checks it in the dump)
    t = pl.mul(x, alpha)
    return pl.add(t, y)


@pl.jit
def axpy_entry(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = axpy(a, b, 3.0)
    return out
