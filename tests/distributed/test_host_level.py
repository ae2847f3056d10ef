"""The HOST level (issue 13): a @pl.jit.host function launches a @pl.jit device program
per rank; compile() traces it into a host plan and builds each distinct device program
once; calling the result runs every rank in its own process, concurrently, on its own
simulated chip, and the outputs match torch."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

import pypto.errors as E
import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedCompiledProgram, DistributedConfig
from pypto.jit.host import HostProgramError
from pypto.ir.options import PassDumpLevel
from pypto.runtime import RunConfig
from pypto.runtime.ranks import RankError

R, C = 8, 16


@pl.jit.incore
def scale_kernel(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]], k: pl.Scalar[pl.INT32]):
    t = pl.load(x, [0, 0], [R, C])
    y = pl.store(pl.add(pl.mul(t, pl.cast(k, target_type=pl.FP32)), t), [0, 0], y)
    return y


@pl.jit
def per_rank(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]], k: pl.Scalar[pl.INT32]):
    return scale_kernel(x, y, k)


@pl.jit
def per_rank_const(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]], k):
    return scale_kernel(x, y, k)          # k specializes the program: one per rank


@pl.jit.host
def scale_all(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(pld.world_size()):
        per_rank(x[r], y[r], r, device=r)


@pl.jit.host
def scale_all_const(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(pld.world_size()):
        per_rank_const(x[r], y[r], r, device=r)


def _cfg(tmp_path, ranks, name="out"):
    return RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / name),
                     distributed_config=DistributedConfig(device_ids=list(range(ranks))))


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


@pytest.mark.parametrize("ranks", [2, 3])
def test_every_rank_runs_its_launch(tmp_path, ranks):
    x = torch.randn(ranks, R, C)
    y = torch.zeros(ranks, R, C)
    compiled = scale_all.compile(x, y, config=_cfg(tmp_path, ranks))
    assert isinstance(compiled, DistributedCompiledProgram)
    compiled(x, y, config=RunConfig(platform="a2a3sim"))
    want = x * torch.arange(1, ranks + 1, dtype=torch.float32).view(ranks, 1, 1)
    torch.testing.assert_close(y, want)
    # ranks whose programs are identical share one build (the rank is a run-time scalar)
    assert sorted(p.name for p in (tmp_path / "out" / "next_levels").iterdir()) == ["per_rank"]
    plan = json.loads((tmp_path / "out" / "distributed_meta.json").read_text())
    assert [ln["rank"] for ln in plan["launches"]] == list(range(ranks))
    assert [ln["args"][0]["offset"] for ln in plan["launches"]] == [r * R * C * 4 for r in range(ranks)]
    # the program runs again on new tensors of the same shapes, and reloads from its directory
    x2 = torch.randn(ranks, R, C)
    DistributedCompiledProgram.from_dir(tmp_path / "out")(x2, y)
    torch.testing.assert_close(y, x2 * torch.arange(1, ranks + 1, dtype=torch.float32).view(ranks, 1, 1))


def test_a_call_compiles_and_runs(tmp_path):
    x, y = torch.randn(2, R, C), torch.zeros(2, R, C)
    scale_all(x, y, config=_cfg(tmp_path, 2))
    torch.testing.assert_close(y, x * torch.tensor([1.0, 2.0]).view(2, 1, 1))


def test_rank_specific_programs_build_once_per_content(tmp_path):
    x, y = torch.randn(2, R, C), torch.zeros(2, R, C)
    scale_all_const.compile(x, y, config=_cfg(tmp_path, 2))(x, y)
    torch.testing.assert_close(y, x * torch.tensor([1.0, 2.0]).view(2, 1, 1))
    assert sorted(p.name for p in (tmp_path / "out" / "next_levels").iterdir()) == \
        ["per_rank_const", "per_rank_const_1"]


def test_the_plan_is_deterministic(tmp_path):
    x, y = torch.randn(2, R, C), torch.zeros(2, R, C)
    scale_all.compile(x, y, config=_cfg(tmp_path, 2, "a"))
    scale_all.compile(x, y, config=_cfg(tmp_path, 2, "b"))
    a, b = (tmp_path / n / "distributed_meta.json" for n in "ab")
    assert a.read_bytes() == b.read_bytes()


def _shm() -> set:
    from pypto.runtime.ranks import segment_prefix
    return {n for n in os.listdir("/dev/shm") if n.startswith(segment_prefix())}


def test_a_failing_rank_fails_the_run_with_its_error_and_leaves_nothing_behind(tmp_path):
    x, y = torch.randn(2, R, C), torch.zeros(2, R, C)
    compiled = scale_all_const.compile(x, y, config=_cfg(tmp_path, 2))
    # damage rank 1's own program: its kernel binary no longer matches its digest
    so = next((tmp_path / "out" / "next_levels" / "per_rank_const_1" / "kernels").rglob("*.so"))
    data = so.read_bytes()
    so.unlink()                    # (a new file: the old one may be the store's object, linked)
    so.write_bytes(data + b"\0")
    with pytest.raises(RankError, match=r"rank 1 \(device 1\) failed") as e:
        compiled(x, y)
    assert e.value.rank == 1
    assert not _shm(), "shared memory left behind"
    # a second run right after works (recompiled: the graph rebuilds the damaged binary)
    scale_all_const.compile(x, y, config=_cfg(tmp_path, 2, "again"))(x, y)
    torch.testing.assert_close(y, x * torch.tensor([1.0, 2.0]).view(2, 1, 1))


def test_errors_name_the_host_line(tmp_path):
    x, y = torch.randn(2, R, C), torch.zeros(2, R, C)
    with pytest.raises(HostProgramError, match="distributed_config"):
        scale_all.compile(x, y, config=RunConfig(platform="a2a3sim"))

    @pl.jit.host
    def off_the_end(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        for r in pl.range(pld.world_size()):
            per_rank(x[r], y[r], r, device=r + 1)

    with pytest.raises(HostProgramError, match=r"test_host_level.py:\d+: device=2 is not a rank"):
        off_the_end.compile(x, y, config=_cfg(tmp_path, 2))

    @pl.jit.host
    def with_config(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        per_rank(x[0], y[0], 0, config=RunConfig())

    with pytest.raises(TypeError, match="pass device=r, not a config"):
        with_config.compile(x, y, config=_cfg(tmp_path, 2))


@pl.jit.host
def in_turn(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    for r in pl.range(3):                  # no device=: the ranks in turn, in launch order
        per_rank(x[r], y[r], r)


def test_launches_without_a_device_take_the_ranks_in_turn(tmp_path):
    x, y = torch.randn(3, R, C), torch.zeros(3, R, C)
    compiled = in_turn.compile(x, y, config=_cfg(tmp_path, 2))
    assert [ln["rank"] for ln in compiled.plan["launches"]] == [0, 1, 0]
    compiled(x, y)
    torch.testing.assert_close(y, x * torch.tensor([1.0, 2.0, 3.0]).view(3, 1, 1))

    @pl.jit.host
    def bad_window(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        pld.window(x, [4, 4], dtype=pl.FP32)

    with pytest.raises(pld.HostLevelError, match="alloc_window_buffer"):
        bad_window.compile(x, y, config=_cfg(tmp_path, 2))


def test_host_level_names_outside_a_host_function():
    with pytest.raises(pld.HostLevelError, match=r"pld.world_size\(\) is a host-level call"):
        pld.world_size()
    with pytest.raises(pl.DSLCallError):
        pl.range(3)


def test_cross_rank_ops_need_a_window_and_say_so_at_the_users_line():
    with pytest.raises(E.TypeCheckError) as e:
        @pl.program
        class Signals:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.INT32],
                  y: pl.Out[pl.Tensor[[R, C], pl.INT32]]) -> pl.Tensor[[R, C], pl.INT32]:
                pld.system.notify(x, 0, [0, 0], 1, op=pld.NotifyOp.AtomicAdd)
                y = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], y)
                return y
    assert "notify expects a pld.DistributedTensor target" in str(e.value)
    assert "test_host_level.py" in str(e.value)
    with pytest.raises(E.NotBuiltError, match="pld.tensor.remote_store is not built"):
        @pl.program
        class TensorRemoteStore:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.INT32],
                  y: pld.DistributedTensor[[R, C], pl.INT32]) -> pl.Tensor[[R, C], pl.INT32]:
                pld.tensor.remote_store(x, y, 0, [0, 0])
                return y


# ----------------------------------------------------------------------------- windows
@pl.jit.incore
def through_window(x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
                   data: pld.DistributedTensor[[1, 64], pl.FP32]):
    data = pl.store(pl.mul(pl.load(x, [0, 0], [1, 64]), 3.0), [0, 0], data)
    y = pl.store(pl.load(data, [0, 0], [1, 64]), [0, 0], y)
    return y


@pl.jit
def window_rank(x: pl.Tensor[[1, 64], pl.FP32], y: pl.Out[pl.Tensor[[1, 64], pl.FP32]],
                data: pld.DistributedTensor[[1, 64], pl.FP32]):
    return through_window(x, y, data)


@pl.jit.host
def window_all(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    small = pld.alloc_window_buffer([2, 3], dtype=pl.INT8)        # 6 bytes: a 32-byte slot
    buf = pld.alloc_window_buffer([1, 64], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        window_rank(x[r], y[r], pld.window(buf, [1, 64], dtype=pl.FP32), device=r)


def test_a_window_buffer_is_each_ranks_own_copy(tmp_path):
    x, y = torch.randn(3, 1, 64), torch.zeros(3, 1, 64)
    compiled = window_all.compile(x, y, config=_cfg(tmp_path, 3).replace(dump_passes=PassDumpLevel.EXPLICIT))
    compiled(x, y)
    torch.testing.assert_close(y, x * 3)
    plan = compiled.plan
    assert [(w["offset"], w["nbytes"]) for w in plan["windows"]] == [(0, 6), (32, 256)]
    assert plan["window_bytes"] == 4096                   # (a rank's window: whole 4 KiB pages)
    assert plan["launches"][1]["args"][2] == {"window": 1, "shape": [1, 64], "dtype": "FP32"}
    host = (tmp_path / "out" / "passes_dump" / "00_host_window_all.txt").read_text()
    assert "# pld.comm_domain: devices=all, slots=[small, buf], 4096 bytes per rank" in host
    assert "buf = pld.alloc_window_buffer([1, 64], dtype=pl.FP32)  # slot [32, 288)" in host
    assert 'window_rank(x[bytes 512:768][1, 64], y[bytes 512:768][1, 64], pld.DistributedTensor[[1, 64], ' \
           'pl.FP32, "window_buffer=buf"], device=2)' in host
    # (the marker is informational: an annotation that carries it parses as without it)
    marked = pl.parse("import pypto.language as pl\nimport pypto.language.distributed as pld\n"
                      "@pl.function(type=pl.FunctionType.InCore)\n"
                      "def k(d: pld.DistributedTensor[[1, 64], pl.FP32, \"window_buffer=buf\"]):\n"
                      "    return\n", filename="m.py")
    assert marked.params[0].var.type.window and marked.params[0].var.type.shape == (1, 64)
    front = (tmp_path / "out" / "next_levels" / "window_rank" / "passes_dump" / "00_frontend.py").read_text()
    assert "import pypto.language.distributed as pld" in front
    assert "data: pld.DistributedTensor[[1, 64], pl.FP32]" in front
