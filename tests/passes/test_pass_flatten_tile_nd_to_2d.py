"""FlattenTileNdTo2D: tiles of rank 3+ become 2-D (leading dims merged); loads keep their
N-D window, stores of a merged window carry it."""
import shutil

import pytest

import pypto.language as pl
from pypto.ir.nodes import For

from pass_helpers import PASSES, assigns, before, body_text, calls, fn, roundtrip, run, tiles

NAME = "FlattenTileNdTo2D"


def flatten(prog):
    return run(before(prog, NAME), NAME)


def whole_3d():
    @pl.program
    class P:
        @pl.function
        def main(self, x: pl.Tensor[[2, 16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[2, 16, 64], pl.FP32]]) -> pl.Tensor[[2, 16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.add(pl.exp(x), x)
            return y
    return P


def per_batch():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4, 16, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[4, 16, 64], pl.FP32]]) -> pl.Tensor[[4, 16, 64], pl.FP32]:
            for b in pl.range(4):
                t = pl.load(x, [b, 0, 0], [1, 16, 64])
                y = pl.store(pl.adds(t, 1.0), [b, 0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4, 16, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[4, 16, 64], pl.FP32]]) -> pl.Tensor[[4, 16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    return P


def test_tensor_ops_on_3d_tiles_become_2d():
    out = flatten(whole_3d())
    assert body_text(out, "main_incore_0") == [
        "x__tile_v0: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0, 0], [2, 16, 64], target_memory=pl.Mem.Vec, flatten=True)",
        "exp__tile_v0: pl.Tile[[32, 64], pl.FP32] = pl.tile.exp(x__tile_v0)",
        "add__tile_v0: pl.Tile[[32, 64], pl.FP32] = pl.tile.add(exp__tile_v0, x__tile_v0)",
        # the window [2, 16, 64] is not the 2-D tile padded with 1s: it is carried
        "y__ssa_v0: pl.Tensor[[2, 16, 64], pl.FP32] = pl.tile.store(add__tile_v0, [0, 0, 0], y, [2, 16, 64])",
        "return y__ssa_v0",
    ]
    assert all(len(t.type.shape) == 2 for t in tiles(fn(out, "main_incore_0")))
    roundtrip(out)


def test_a_window_with_unit_leading_dims_stores_without_a_window():
    out = flatten(per_batch())
    k = fn(out, "k")
    (load,) = assigns(k, "tile.load")
    assert load.var.type.shape == (16, 64) and load.value.kwargs["flatten"] is True
    (store,) = calls(k, "tile.store")
    assert len(store.args) == 3
    roundtrip(out)


def test_creates_and_carried_tiles_follow():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2, 8, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]]) -> pl.Tensor[[2, 8, 64], pl.FP32]:
            acc = pl.load(x, [0, 0, 0], [2, 8, 64])
            for i, (a,) in pl.range(3, init_values=(acc,)):
                nxt = pl.mul(a, a)
                a_out = pl.yield_(nxt)
            tmp = pl.create_tile([2, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            s = pl.add(a_out, tmp)
            y = pl.store(s, [0, 0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2, 8, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]]) -> pl.Tensor[[2, 8, 64], pl.FP32]:
            y = self.k(x, y)
            return y

    out = flatten(P)
    k = fn(out, "k")
    (loop,) = [s for s in k.body if isinstance(s, For)]
    assert loop.iter_args[0].var.type.shape == (16, 64) and loop.return_vars[0].type.shape == (16, 64)
    (create,) = calls(k, "tile.create")
    assert [d.value for d in create.args[0].items] == [16, 64]
    (add,) = assigns(k, "tile.add")
    assert add.var.type.shape == (16, 64)
    (store,) = calls(k, "tile.store")
    assert [d.value for d in store.args[3].items] == [2, 8, 64]
    roundtrip(out)


def test_2d_kernels_are_untouched_and_reshapes_read_flattened_sources():
    import pipeline_programs as pp
    src = before(pp.softmax(), NAME)
    assert run(src, NAME).as_python() == src.as_python()

    @pl.program
    class C:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2, 8, 64], pl.FP32], v: pl.Tensor[[2, 1, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]]) -> pl.Tensor[[2, 8, 64], pl.FP32]:
            t = pl.load(x, [0, 0, 0], [2, 8, 64])
            w = pl.load(v, [0, 0, 0], [2, 1, 64])
            y = pl.store(pl.maximum(t, t), [0, 0, 0], y)
            y = pl.store(pl.reshape(w, [2, 64]), [0, 0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2, 8, 64], pl.FP32], v: pl.Tensor[[2, 1, 64], pl.FP32],
                 y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]]) -> pl.Tensor[[2, 8, 64], pl.FP32]:
            y = self.k(x, v, y)
            return y

    out = flatten(C)            # a reshape from 3-D reads the flattened source
    (rs,) = assigns(fn(out, "k"), "tile.reshape")
    assert rs.value.args[0].type.shape == (2, 64) and rs.var.type.shape == (2, 64)
    assert PASSES[NAME].local


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_per_batch_3d_kernel_runs(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    from pypto import ir
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    x, y = torch.randn(4, 16, 64), torch.zeros(4, 16, 64)
    ir.compile(per_batch(), output_dir=tmp_path / "out", platform="a2a3sim")(x, y)
    torch.testing.assert_close(y, x + 1)
