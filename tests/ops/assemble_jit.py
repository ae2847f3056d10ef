"""@pl.jit kernels inserting one tile into another (test_ops_tile_assemble)."""
import pypto.language as pl


@pl.jit
def insert_vec(x: pl.Tensor, src: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        tx = pl.load(x, [0, 0], [32, 32])
        ts = pl.load(src, [0, 0], [16, 16])
        r = pl.tile.assemble(tx, ts, [8, 16])
        pl.store(pl.add(r, r), [0, 0], y)
    return y
