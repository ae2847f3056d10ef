"""ChipWorker: registration, resident tensors, copies, binding checks, lifetime."""
import threading

import numpy as np
import pytest
import torch

from pypto.runtime import (ChipWorker, DeviceTensor, DeviceUnavailableError, KernelExecutionError,
                           PlatformMismatchError, RunConfig, current_worker)
from pypto import dtype as dt

from runtime_helpers import tensor

ADD = [tensor("a", [16, 16]), tensor("b", [16, 16]), tensor("out", [16, 16], "Out")]
PROBE = [tensor("x", [4, 4]), tensor("out", [4], "Out", "int64")]


def test_run_and_register(programs):
    c = programs("add", ADD)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:
        torch.testing.assert_close(w.run(c, a, b), a + b)
        handle = w.register(c)
        assert w.register(c) is handle
        for _ in range(3):
            out = torch.zeros(16, 16)
            assert handle(a, b, out) is out
            torch.testing.assert_close(out, a + b)
        with handle:
            handle(a, b, out)
        assert not handle.active
        with pytest.raises(RuntimeError, match="unregistered"):
            handle(a, b, out)
        torch.testing.assert_close(w.run(c, a, b), a + b)   # run registers again
        assert w.stats["launches"] == 6
    assert w.closed


def test_device_tensor_residency(programs):
    """A DeviceTensor's buffer is what the kernel sees, and launches copy nothing."""
    probe = programs("probe", PROBE)
    add = programs("add", ADD)
    with ChipWorker(RunConfig()) as w:
        x = w.alloc_tensor([4, 4], dt.FP32, init=torch.arange(16.0).reshape(4, 4))
        assert isinstance(x, DeviceTensor) and x.shape == (4, 4) and x.dtype is dt.FP32
        assert w.stats["copies_to_device"] == 1
        for _ in range(2):
            out = probe(x)
            assert out[0].item() == x.data_ptr()
        host = torch.zeros(4, 4)
        w.copy_from(host, x)
        assert torch.equal(host, torch.arange(16.0).reshape(4, 4))

        a = w.alloc_tensor([16, 16], "fp32", init=1.5)
        b = w.alloc_tensor((16, 16), dt.FP32, init=np.full((16, 16), 2.0, np.float32))
        out = w.alloc_tensor([16, 16], dt.FP32)
        before = dict(w.stats)
        assert add(a, b, out) is out                  # result stays on the device
        add(out, b, out)                              # and feeds the next launch in place
        assert w.stats["copies_to_device"] == before["copies_to_device"]
        assert w.stats["copies_from_device"] == before["copies_from_device"]
        result = w.copy_from(torch.empty(16, 16), out)
        assert torch.all(result == 5.5)
        assert w.stats["copies_from_device"] == before["copies_from_device"] + 1
        # return style with device inputs: outputs are host tensors
        torch.testing.assert_close(add(a, b), torch.full((16, 16), 3.5))
        w.copy_to(a, torch.zeros(16, 16))
        torch.testing.assert_close(add(a, b), torch.full((16, 16), 2.0))
        w.free_tensor(a)
        assert a.freed
        with pytest.raises(ValueError, match="'a'.*freed"):
            add(a, b)
    assert b.freed and out.freed and x.freed        # close frees what was left


def test_device_tensor_checks(programs):
    add = programs("add", ADD)
    with ChipWorker(RunConfig()) as w1, ChipWorker(RunConfig()) as w2:
        mine = w1.alloc_tensor([16, 16], dt.FP32)
        with pytest.raises(ValueError, match="another ChipWorker"):
            w2.run(add, mine, mine)
        with pytest.raises(ValueError, match="'a'.*shape"):
            w1.run(add, w1.alloc_tensor([8, 16], dt.FP32), mine)
        with pytest.raises(ValueError, match="elements"):
            w1.copy_to(mine, torch.zeros(3))
        with pytest.raises(TypeError, match="dtype"):
            w1.copy_from(torch.zeros(16, 16, dtype=torch.float16), mine)
        bf = w1.alloc_tensor([2], dt.BF16, init=1.0)
        got = w1.copy_from(torch.zeros(2, dtype=torch.bfloat16), bf)
        assert got.tolist() == [1.0, 1.0]


def test_platform_mismatch_refused_before_launch(programs):
    c = programs("add", ADD, platform="a5sim")
    a = torch.ones(16, 16)
    out = torch.zeros(16, 16)
    with ChipWorker(RunConfig(platform="a2a3sim")) as w:
        with pytest.raises(PlatformMismatchError) as e:
            w.run(c, a, a, out)
        assert "a5sim" in str(e.value) and "a2a3sim" in str(e.value)
        with pytest.raises(ValueError):
            w.register(c)
        with pytest.raises(PlatformMismatchError):
            c(a, a, out)            # the active worker is used, and refuses
        assert w.stats["launches"] == 0 and c._chip is None
    assert torch.count_nonzero(out) == 0
    with ChipWorker(RunConfig(platform="a5sim")) as w:
        c(a, a, out)
        assert torch.all(out == 2)


def test_runtime_mismatch_refused(programs):
    c = programs("add", ADD, runtime="host_build_graph")
    a = torch.ones(16, 16)
    with ChipWorker(RunConfig()) as w:
        with pytest.raises(PlatformMismatchError) as e:
            w.run(c, a, a)
        assert "host_build_graph" in str(e.value) and "tensormap_and_ringbuffer" in str(e.value)
        assert w.stats["launches"] == 0
    with ChipWorker(RunConfig(runtime="HOST_BUILD_GRAPH")) as w:
        torch.testing.assert_close(w.run(c, a, a), a + a)


def test_one_shot_follows_program(programs):
    c = programs("add", ADD, runtime="host_build_graph", platform="a5sim")
    a = torch.ones(16, 16)
    assert current_worker() is None
    torch.testing.assert_close(c(a, a), a + a)
    torch.testing.assert_close(c(a, a, config=RunConfig(platform="a5sim")), a + a)
    with pytest.raises(PlatformMismatchError):
        c(a, a, config=RunConfig(platform="a2a3sim"))


def test_hardware_platform_is_a_clear_error():
    with pytest.raises(DeviceUnavailableError, match="a2a3sim"):
        ChipWorker(RunConfig(platform="a2a3"))


def test_current_worker_stack_is_per_thread(programs):
    c = programs("add", ADD)
    a = torch.ones(16, 16)
    with ChipWorker(RunConfig()) as outer:
        assert current_worker() is outer
        with ChipWorker(RunConfig()) as inner:
            assert current_worker() is inner
            c(a, a)
            assert inner.stats["launches"] == 1 and outer.stats["launches"] == 0
        assert current_worker() is outer
        seen = []
        t = threading.Thread(target=lambda: seen.append(current_worker()))
        t.start()
        t.join()
        assert seen == [None]
        c(a, a)
        assert outer.stats["launches"] == 1
    assert current_worker() is None


def test_kernel_error_keeps_worker_alive(programs):
    fail = programs("fail", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")])
    add = programs("add", ADD)
    a = torch.ones(16, 16)
    with ChipWorker(RunConfig()) as w:
        for _ in range(2):
            with pytest.raises(KernelExecutionError) as e:
                fail(torch.zeros(8, 8))
            err = e.value
            assert err.kernel == "fail_kernel" and err.func_id == 2 and err.task_id == 1
            assert "injected failure: tile of 64 elements" in str(err)
            assert "fail_kernel" in str(err)
            torch.testing.assert_close(add(a, a), a + a)


def test_close_is_idempotent_and_final(programs):
    c = programs("add", ADD)
    w = ChipWorker(RunConfig())
    t = w.alloc_tensor([2], dt.INT32, init=7)
    w.close()
    w.close()
    assert t.freed
    with pytest.raises(RuntimeError, match="closed"):
        w.run(c, torch.ones(16, 16), torch.ones(16, 16))


def test_workers_in_parallel_threads(programs):
    c = programs("chain", [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")])
    errors, results = [], []

    def job(i):
        try:
            a, b = torch.randn(64, 32), torch.randn(64, 32)
            if i % 2:
                with ChipWorker(RunConfig()) as w:
                    for _ in range(5):
                        results.append(torch.allclose(w.run(c, a, b), a + 2 * b))
            else:
                for _ in range(5):
                    results.append(torch.allclose(c(a, b), a + 2 * b))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == [True] * 20


def test_raw_address_copies_stay_inside_the_workers_tensors():
    """copy_to / copy_from(dst, src, nbytes) with addresses, as PyPTO's device-tensor
    tests write them (`t.data_ptr` read as an int, or called): the device side must lie
    inside one of this worker's live tensors."""
    with ChipWorker() as w:
        src = torch.arange(256.0).reshape(16, 16)
        t = w.alloc_tensor((16, 16), torch.float32, init=src)
        assert isinstance(t.data_ptr, int) and t.data_ptr() == int(t.data_ptr)
        back = torch.zeros(16, 16)
        assert w.copy_from(back.data_ptr(), t.data_ptr, t.nbytes) is None
        assert torch.equal(back, src)
        half = torch.full((8, 16), -1.0)                 # the second half of the rows
        w.copy_to(t.data_ptr + 8 * 16 * 4, half.data_ptr(), half.nbytes)
        w.copy_from(back.data_ptr(), t.data_ptr, t.nbytes)
        assert torch.equal(back[:8], src[:8]) and torch.all(back[8:] == -1)
        with pytest.raises(ValueError, match="not inside a live DeviceTensor"):
            w.copy_from(back.data_ptr(), t.data_ptr + 4, t.nbytes)      # one element past the end
        with pytest.raises(ValueError, match="not inside a live DeviceTensor"):
            w.copy_from(back.data_ptr(), back.data_ptr(), 16)          # host memory is not device
        with pytest.raises(TypeError, match="ints"):
            w.copy_from(back.data_ptr(), t.data_ptr, 1.5)
        w.free_tensor(t)


def test_worker_base_class_load_count_and_owned_tensors(programs):
    """PyPTO's explicit-dispatch surface: ChipWorker is a Worker; a program counts as
    loaded when first registered (once, however often it is registered or launched); the
    tensors a worker holds are listed until close() frees them."""
    from pypto.runtime import Worker, ensure_pto_isa_root
    from pypto.runtime.errors import DeviceUnavailableError
    add = programs("add", ADD)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    w = ChipWorker(config=RunConfig(platform="a2a3sim"), runtime="tensormap_and_ringbuffer")
    try:
        assert isinstance(w, Worker) and w.aicpu_dlopen_count == 0
        a_dev = w.alloc_tensor((16, 16), torch.float32, init=a)
        assert w._owned_tensors == [a_dev]
        h = w.register(add)
        assert w.aicpu_dlopen_count == 1                  # registering loads the program
        out = torch.zeros(16, 16)
        for _ in range(3):
            h(a_dev, b, out)
        h.unregister()
        w.register(add)(a_dev, b, out)
        torch.testing.assert_close(out, a + b)
        assert w.aicpu_dlopen_count == 1
    finally:
        w.close()
    assert w._owned_tensors == [] and a_dev.freed
    with pytest.raises(DeviceUnavailableError, match="a2a3sim / a5sim"):
        ensure_pto_isa_root()
