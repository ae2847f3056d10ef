"""A distributed run never hangs and leaves nothing behind (issue 13, reliability): a wait
no peer satisfies fails after PYPTO_COMM_WAIT_S naming the rank, the cell and the value;
a rank killed mid-run fails the run at once with that rank; the shared memory is gone and
no rank process is left either way; a second run right after works."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.runtime import RunConfig
from pypto.runtime.ranks import RankError

N = 64


@pl.jit.incore
def wait_for(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             flag: pld.DistributedTensor[[2, 1], pl.INT32], expected: pl.Scalar[pl.INT32]):
    ctx = pld.get_comm_ctx(flag)
    me = pld.rank(ctx)
    pld.system.notify(flag, (me + 1) % 2, [me, 0], 1, op=pld.NotifyOp.AtomicAdd)
    pld.system.wait(flag, [1 - me, 0], expected, cmp=pld.WaitCmp.Ge)     # the peer gives 1
    y = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], y)
    return y


@pl.jit
def wait_rank(x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
              flag: pld.DistributedTensor[[2, 1], pl.INT32], expected: pl.Scalar[pl.INT32]):
    return wait_for(x, y, flag, expected)


@pl.jit.host
def waits(x: pl.Tensor[[2, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[2, 1, N], pl.FP32]],
          expected: pl.Tensor[[2], pl.INT32]):
    buf = pld.alloc_window_buffer([2, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        wait_rank(x[r], y[r], pld.window(buf, [2, 1], dtype=pl.INT32), int(expected[r]), device=r)


def _cfg(tmp_path, name="out"):
    return RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / name),
                     distributed_config=DistributedConfig(device_ids=[0, 1]))


def _shm() -> set:
    from pypto.runtime.ranks import segment_prefix
    return {n for n in os.listdir("/dev/shm") if n.startswith(segment_prefix())}


def _ranks_of_this_process() -> list[int]:
    """pids of the rank processes this test process started (read from /proc)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"pypto.runtime.rank_main" in cmd:
            out.append(int(pid))
    return out


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


def test_a_wait_never_satisfied_names_the_rank_the_cell_and_the_value(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_COMM_WAIT_S", "1")
    x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    expected = torch.tensor([1, 5], dtype=torch.int32)       # rank 1 waits for 5; it only gets 1
    compiled = waits.compile(x, y, expected, config=_cfg(tmp_path))
    t = time.monotonic()
    with pytest.raises(RankError) as e:
        compiled(x, y, expected)
    assert time.monotonic() - t < 30
    msg = str(e.value)
    assert e.value.rank == 1 and "rank 1 waited 1 s for signal cell [0, 0] to be >= 5; it holds 1" in msg
    assert not _shm() and not _ranks_of_this_process()
    # the same program whose waits are satisfied runs right after
    ok = torch.tensor([1, 1], dtype=torch.int32)
    waits.compile(x, y, ok, config=_cfg(tmp_path, "again"))(x, y, ok)
    torch.testing.assert_close(y, x)


def test_a_killed_rank_fails_the_run_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_COMM_WAIT_S", "120")         # (rank 1 would wait that long)
    x, y = torch.randn(2, 1, N), torch.zeros(2, 1, N)
    expected = torch.tensor([1, 5], dtype=torch.int32)
    compiled = waits.compile(x, y, expected, config=_cfg(tmp_path))
    killed = []

    def kill_one():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            pids = _ranks_of_this_process()
            if len(pids) == 2:
                time.sleep(1.0)                            # (both running their kernels)
                os.kill(pids[-1], signal.SIGKILL)
                killed.append(pids[-1])
            time.sleep(0.05)
    threading.Thread(target=kill_one, daemon=True).start()
    t = time.monotonic()
    with pytest.raises(RankError, match="killed by a signal"):
        compiled(x, y, expected)
    assert killed and time.monotonic() - t < 60
    assert not _shm() and not _ranks_of_this_process()
