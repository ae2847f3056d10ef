import pypto.language as pl

from ..config import CHUNK, COLS, PAD, ROWS


@pl.jit.inline
def scale_rows(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out[:, k] = x[:, k] * w[0, k], chunk by chunk (affine slice bounds)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale_rows"):
        for kb in pl.range(COLS // CHUNK):
            xs = x[0:ROWS, kb * CHUNK:(kb + 1) * CHUNK]
            ws = w[0:1, kb * CHUNK:(kb + 1) * CHUNK]
            out = pl.assemble(out, pl.col_expand_mul(xs, ws), [0, kb * CHUNK])
    return out


@pl.jit.inline
def pad_rows(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """out = x over its first ROWS rows, zeros in the PAD - ROWS rows after (literal shapes
    of folded constants)."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="pad_rows"):
        out = pl.assemble(out, x[0:ROWS, 0:COLS], [0, 0])
        zero = pl.full([PAD - ROWS, COLS], dtype=pl.FP32, value=0.0)
        out = pl.assemble(out, zero, [ROWS, 0])
    return out
