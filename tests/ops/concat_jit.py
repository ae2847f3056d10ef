"""A @pl.jit kernel concatenating two tiles (test_ops_concat)."""
import pypto.language as pl


@pl.jit
def tile_concat(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        ta = pl.load(a, [0, 0], [32, 16])
        tb = pl.load(b, [0, 0], [32, 24])
        t: pl.Tile[[32, 40], pl.FP32] = pl.concat(ta, tb)
        pl.store(t, [0, 0], c)
    return c
