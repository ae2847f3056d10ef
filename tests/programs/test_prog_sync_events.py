"""Cross-core events (issue 12): pl.system.set_ffts / sync_set / sync_wait, a hand-written
protocol between the AIC and the AIVs of a core group (ffts_mode 2) or between the two AIVs
(ffts_mode 1), the data passing through GM. Each core runs on its own thread; a wait blocks
until its core's counter is positive. Every result is checked against torch."""
from __future__ import annotations

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
from pypto import ir
from pypto.ptoas.errors import PtoasError

from prog_helpers import close, randn

M, K, LANE0 = 16, 16, 6      # the AIVs write rows [0, 6) and [6, 16): an uneven split

PING_PONG = """
import pypto.language as pl
M = 16
K = 16
LANE0 = 6
ROUNDS = 3

@pl.program
class PingPong:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], w: pl.Tensor[[K, K], pl.FP32],
             transfer: pl.InOut[pl.Tensor[[M, K], pl.FP32]], ws: pl.Tensor[[256], pl.INT64],
             out: pl.Out[pl.Tensor[[ROUNDS * M, K], pl.FP32]]) -> pl.Tensor[[ROUNDS * M, K], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="ping"):
            pl.system.set_ffts(ws)
            for i in pl.range(ROUNDS):
                # the cube lets the AIVs write transfer (it has read the last round's) ...
                pl.system.sync_set(1, pipe=pl.PipeType.FIX, ffts_mode=2, core_type="aic")
                for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                    pl.system.sync_wait(1, pipe=pl.PipeType.MTE2, core_type="aiv")
                    if aiv_id == 0:
                        x0: pl.Tile[[LANE0, K], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [LANE0, K])
                        pl.store(pl.adds(x0, i), [0, 0], transfer)
                    else:
                        x1: pl.Tile[[M - LANE0, K], pl.FP32, pl.Mem.Vec] = pl.load(a, [LANE0, 0], [M - LANE0, K])
                        pl.store(pl.adds(x1, i), [LANE0, 0], transfer)
                    # ... and reads it once both AIVs have written their rows
                    pl.system.sync_set(0, pipe=pl.PipeType.MTE3, ffts_mode=2, core_type="aiv")
                pl.system.sync_wait(0, pipe=pl.PipeType.MTE2, core_type="aic")
                t = pl.move(pl.load(transfer, [0, 0], [M, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
                r = pl.move(pl.load(w, [0, 0], [K, K], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
                out = pl.store(pl.matmul(t, r), [i * M, 0], out)
        return out
"""


def test_the_cube_and_the_aivs_take_turns_through_gm(tmp_path):
    c = ir.compile(pl.parse(PING_PONG, filename="/u/ping.py"), output_dir=str(tmp_path / "o"),
                   platform="a2a3sim")
    a, w = randn(M, K, seed=1), randn(K, K, seed=2)
    transfer, ws, out = torch.zeros(M, K), torch.zeros(256, dtype=torch.int64), torch.zeros(3 * M, K)
    c(a, w, transfer, ws, out)
    close(out, torch.cat([(a + i) @ w for i in range(3)]), 1e-4, 1e-4)
    pto = (tmp_path / "o" / "ptoas" / "ping.pto").read_text()
    aic, aiv = pto[pto.index("@ping_aic("):pto.index("@ping_aiv(")], pto[pto.index("@ping_aiv("):]
    assert "pto.sync_set ins(%__pypto_group_pipe," in aic and "ffts_mode = 2" in aic
    assert "pto.sync_wait ins(%__pypto_group_pipe, %__pypto_spmd_subblock_idx," in aiv
    assert "pto.set_ffts ins(" in aic and "pto.set_ffts ins(" in aiv


SWAP = """
import pypto.language as pl
H = 8
K = 32

@pl.program
class Swap:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[2 * H, K], pl.FP32], tmp: pl.InOut[pl.Tensor[[2 * H, K], pl.FP32]],
             ws: pl.Tensor[[256], pl.INT64],
             y: pl.Out[pl.Tensor[[2 * H, K], pl.FP32]]) -> pl.Tensor[[2 * H, K], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="swap"):
            pl.system.set_ffts(ws)
            for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                mine = pl.load(x, [aiv_id * H, 0], [H, K])
                pl.store(pl.muls(mine, 3.0), [aiv_id * H, 0], tmp)
                # mode 1: each AIV goes on once both have written their half
                pl.system.sync_set(2, pipe=pl.PipeType.MTE3, ffts_mode=1, core_type="aiv")
                pl.system.sync_wait(2, pipe=pl.PipeType.MTE2, core_type="aiv")
                theirs = pl.load(tmp, [(1 - aiv_id) * H, 0], [H, K])
                y = pl.store(theirs, [aiv_id * H, 0], y)
        return y
"""


def test_the_two_aivs_meet_with_mode_1(tmp_path):
    c = ir.compile(pl.parse(SWAP, filename="/u/swap.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim")
    x, tmp, ws, y = randn(16, 32, seed=3), torch.zeros(16, 32), torch.zeros(256, dtype=torch.int64), torch.zeros(16, 32)
    c(x, tmp, ws, y)
    close(y, torch.cat([x[8:], x[:8]]) * 3.0, 1e-6, 1e-6)


def test_a5_needs_no_ffts_workspace(tmp_path):
    src = PING_PONG.replace("            pl.system.set_ffts(ws)\n", "")
    c = ir.compile(pl.parse(src, filename="/u/ping.py"), output_dir=str(tmp_path / "o"), platform="a5sim")
    a, w = randn(M, K, seed=4), randn(K, K, seed=5)
    out = torch.zeros(3 * M, K)
    c(a, w, torch.zeros(M, K), torch.zeros(256, dtype=torch.int64), out)
    close(out, torch.cat([(a + i) @ w for i in range(3)]), 1e-4, 1e-4)


@pytest.mark.parametrize("old, new, err, match, line", [
    ("sync_set(0,", "sync_set(14,", E.TypeCheckError, r"event id is 0 to 13", 28),
    ("pipe=pl.PipeType.MTE3, ffts_mode=2", "pipe=pl.PipeType.MTE3, ffts_mode=0", E.NotBuiltError,
     r"ffts_mode=0 .* is not built", 28),
    ("pipe=pl.PipeType.FIX, ffts_mode=2, core_type=\"aic\"", "pipe=pl.PipeType.FIX, ffts_mode=1, core_type=\"aic\"",
     E.TypeCheckError, r"the AIC cannot raise it", 18),
    ("sync_wait(0, pipe=pl.PipeType.MTE2,", "sync_wait(0, pipe=2,", E.TypeCheckError, r"pipe=pl.PipeType", 29),
    ("ws: pl.Tensor[[256], pl.INT64]", "ws: pl.Tensor[[128], pl.INT64]", E.TypeCheckError,
     r"at least 256 elements", 15),
])
def test_bad_events_are_refused_at_the_users_line(old, new, err, match, line):
    assert old in PING_PONG
    with pytest.raises(err, match=match) as e:
        ir.compile(pl.parse(PING_PONG.replace(old, new), filename="/u/ping.py"), platform="a2a3sim",
                   skip_ptoas=True)
    assert e.value.span.file == "ping.py" and e.value.span.line == line


def test_a2a3_needs_the_ffts_workspace_first(tmp_path):
    src = PING_PONG.replace("            pl.system.set_ffts(ws)\n", "")
    with pytest.raises(PtoasError, match=r"ping\.py:\d+:\d+: .*names its FFTS workspace first"):
        ir.compile(pl.parse(src, filename="/u/ping.py"), output_dir=str(tmp_path / "o"), platform="a2a3sim")
