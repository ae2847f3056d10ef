"""A @pl.jit kernel whose valid extent is a scalar parameter (test_ops_valid_shape)."""
import pypto.language as pl


@pl.jit
def scaled_prefix(data: pl.Tensor, scale: pl.FP32, vlen: pl.INDEX, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(data, [0, 0], [64, 64], valid_shape=[64, vlen], target_memory=pl.Mem.Vec)
        padded = pl.tile.fillpad(t, pad_value=pl.PadValue.min)
        pl.store(pl.mul(padded, scale), [0, 0], output)
    return output
