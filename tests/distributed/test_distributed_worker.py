"""DistributedWorker (issue 13.4): several compiled HOST programs dispatched on one set of
rank processes, a resident tensor (a KV cache) kept between them, persistent windows."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.jit.host import HostProgramError
from pypto.runtime import DistributedWorker, RunConfig

T = 32


@pl.jit.incore
def fill_cache(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    t = pl.load(prompt, [0, 0], [T, T])
    return pl.store(pl.mul(t, 3.0), [0, 0], kv)


@pl.jit
def prefill_chip(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    return fill_cache(prompt, kv)


@pl.jit.host
def prefill(prompt: pl.Tensor, kv: pl.Out[pl.Tensor]):
    prefill_chip(prompt, kv)


@pl.jit.incore
def step_cache(token: pl.Tensor, kv: pl.InOut[pl.Tensor], logits: pl.Out[pl.Tensor]):
    t = pl.load(token, [0, 0], [T, T])
    c = pl.load(kv, [0, 0], [T, T])
    logits = pl.store(pl.add(t, c), [0, 0], logits)
    kv = pl.store(pl.add(c, 1.0), [0, 0], kv)              # the cache moves on every step
    return logits


@pl.jit
def decode_chip(token: pl.Tensor, kv: pl.InOut[pl.Tensor], logits: pl.Out[pl.Tensor]):
    return step_cache(token, kv, logits)


@pl.jit.host
def decode(token: pl.Tensor, kv: pl.InOut[pl.Tensor], logits: pl.Out[pl.Tensor]):
    decode_chip(token, kv, logits)


@pytest.fixture(autouse=True)
def _store(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))


def _cfg(tmp_path, name, ranks=1):
    return RunConfig(platform="a2a3sim", save_kernels_dir=str(tmp_path / name),
                     distributed_config=DistributedConfig(device_ids=list(range(ranks))))


def _programs(tmp_path):
    def s():
        return torch.zeros(T, T)
    return (prefill.compile(s(), s(), config=_cfg(tmp_path, "prefill")),
            decode.compile(s(), s(), s(), config=_cfg(tmp_path, "decode")))


def test_a_resident_cache_lives_across_programs(tmp_path):
    prefill_c, decode_c = _programs(tmp_path)
    prompt, token, logits = torch.randn(T, T), torch.zeros(T, T), torch.zeros(T, T)
    with DistributedWorker([prefill_c, decode_c]) as rt:
        kv = rt.alloc_tensor((T, T), torch.float32)
        rt.run(prefill_c, prompt, kv)
        for step in range(3):
            token.fill_(float(step))
            rt.run(decode_c, token, kv, logits)
            torch.testing.assert_close(logits, step + prompt * 3 + step)
        back = torch.zeros(T, T)
        rt.copy_from(back, kv)
        torch.testing.assert_close(back, prompt * 3 + 3)
        # the symmetric form prepares both programs on one worker too
        with pytest.raises(TypeError, match="ambiguous"):
            rt(prompt, kv)
        rt.free_tensor(kv)
        rt.free_tensor(kv)                                   # (twice is fine)
        with pytest.raises(TypeError, match="not a live tensor of this worker"):
            rt.run(prefill_c, prompt, kv)
    with pytest.raises(RuntimeError, match=r"DistributedWorker.run\(\) called after close\(\)"):
        rt.run(prefill_c, prompt, torch.zeros(T, T))
    with prefill_c.prepare(extra_compiled=[decode_c]) as rt2:
        kv2 = rt2.alloc_tensor((T, T), torch.float32, init=torch.ones(T, T))
        rt2.run(decode_c, token, kv2, logits)
        torch.testing.assert_close(logits, token + 1)
        with pytest.raises(TypeError, match="one-shot"):
            decode_c(token, kv2, logits)


def test_worker_arguments_are_checked(tmp_path):
    prefill_c, decode_c = _programs(tmp_path)
    same = torch.zeros(T, T)
    with pytest.raises(HostProgramError, match="are given the same tensor"):
        prefill.compile(same, same, config=_cfg(tmp_path, "same"))
    with pytest.raises(ValueError, match="at least one"):
        DistributedWorker([])
    with pytest.raises(ValueError, match="not sub-workers"):
        DistributedWorker(prefill_c, callbacks={"nope": lambda args: None})
    with pytest.raises(ValueError, match="needs persistent=True"):
        DistributedWorker(prefill_c, reset_persistent_windows=True)
    with pytest.raises(ValueError, match="startup_timeout_s"):
        DistributedWorker(prefill_c, startup_timeout_s=0)
    other = prefill.compile(torch.zeros(T, T), torch.zeros(T, T), config=_cfg(tmp_path, "two", ranks=2))
    with pytest.raises(ValueError, match="same device_ids"):
        DistributedWorker([prefill_c, other])
    with DistributedWorker(prefill_c) as rt:
        with pytest.raises(ValueError, match="registered when this worker was constructed"):
            rt.run(decode_c, torch.zeros(T, T), torch.zeros(T, T), torch.zeros(T, T))


# ---------------------------------------------------------------- persistent windows
@pl.jit.incore
def count_calls(y: pl.Out[pl.Tensor[[1, 8], pl.INT32]], tally: pld.DistributedTensor[[1, 8], pl.INT32]):
    me = pld.rank(pld.get_comm_ctx(tally))
    pld.system.notify(tally, 0, [0, me], 1, op=pld.NotifyOp.AtomicAdd)   # rank 0's tally, my column
    for i in pl.range(8):
        pl.write(y, [0, i], pl.read(tally, [0, i]))
    return y


@pl.jit
def count_rank(y: pl.Out[pl.Tensor[[1, 8], pl.INT32]], tally: pld.DistributedTensor[[1, 8], pl.INT32]):
    return count_calls(y, tally)


@pl.jit.host
def counting(y: pl.Out[pl.Tensor[[1, 1, 8], pl.INT32]]):
    buf = pld.alloc_window_buffer([1, 8], dtype=pl.INT32)
    count_rank(y[0], pld.window(buf, [1, 8], dtype=pl.INT32), device=0)


@pytest.mark.parametrize("persistent, reset, want", [(False, None, 1), (True, False, 3), (True, True, 1)])
def test_windows_live_for_a_dispatch_unless_persistent(tmp_path, persistent, reset, want):
    y = torch.zeros(1, 1, 8, dtype=torch.int32)
    compiled = counting.compile(y, config=_cfg(tmp_path, "count"))
    with compiled.prepare(persistent=persistent, reset_persistent_windows=reset) as rt:
        for _ in range(3):
            rt(y)
    assert y[0, 0, 0].item() == want and y[0, 0, 1:].abs().sum().item() == 0
