"""@pl.jit kernels whose valid extent is known only when they run (test_ops_dyn_valid)."""
import pypto.language as pl


@pl.jit
def pick_valid(data: pl.Tensor, cfg: pl.Tensor, output: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        is_last = pl.read(cfg, [0])
        if is_last == 1:
            vlen = pl.read(cfg, [1])
        else:
            vlen = pl.read(cfg, [2])
        t = pl.load(data, [0, 0], [64, 64], valid_shape=[64, vlen], target_memory=pl.Mem.Vec)
        doubled = pl.add(t, t)
        pl.store(pl.tile.fillpad(doubled, pad_value=pl.PadValue.min), [0, 0], output)
    return output


@pl.jit
def ragged_rows(data: pl.Tensor, cfg: pl.Tensor, sums: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        rows = pl.read(cfg, [0])
        t = pl.load(data, [0, 0], [32, 64], valid_shape=[rows, 64], target_memory=pl.Mem.Vec)
        tmp = pl.create_tile([32, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        pl.store(pl.row_sum(pl.exp(t), tmp), [0, 0], sums)
    return sums


@pl.jit
def ragged_tail(buf: pl.Tensor, cfg: pl.Tensor, output: pl.Out[pl.Tensor]):
    """The ragged-tail idiom: a run-time trip count, the last block partial."""
    with pl.at(level=pl.Level.CORE_GROUP):
        n_blocks = pl.cast(pl.read(cfg, [0]), pl.INDEX)
        last = pl.cast(pl.read(cfg, [1]), pl.INDEX)
        size = pl.cast(pl.read(cfg, [2]), pl.INDEX)
        for i in pl.range(n_blocks):
            if i == n_blocks - 1:
                vlen = last
            else:
                vlen = size
            t = pl.load(buf, [i * 16, 0], [16, 64], valid_shape=[16, vlen], target_memory=pl.Mem.Vec)
            pl.store(pl.tile.fillpad(t, pad_value=pl.PadValue.zero), [i * 16, 0], output)
    return output
