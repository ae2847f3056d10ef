"""Calling a CompiledProgram: numerics, call styles, argument checks."""
import numpy as np
import pytest
import torch

from pypto.runtime import ChipWorker, OrchestrationError, RunConfig

from runtime_helpers import scalar, tensor

ADD = [tensor("a", [64, 32]), tensor("b", [64, 32]), tensor("out", [64, 32], "Out")]


def test_add_in_place_matches_torch(programs):
    c = programs("add", ADD)
    a, b = torch.randn(64, 32), torch.randn(64, 32)
    out = torch.zeros(64, 32)
    result = c(a, b, out)
    assert result is out
    torch.testing.assert_close(out, a + b)


def test_return_style_allocates_outputs(programs):
    c = programs("chain", ADD)
    a, b = torch.randn(64, 32), torch.randn(64, 32)
    out = c(a, b)
    assert isinstance(out, torch.Tensor) and out.shape == (64, 32) and out.dtype == torch.float32
    torch.testing.assert_close(out, a + 2 * b)


def test_multiple_outputs_return_a_tuple(programs):
    c = programs("sleep2", [tensor("x", [8, 8]), tensor("y1", [8, 8], "Out"), tensor("y2", [8, 8], "Out")])
    x = torch.randn(8, 8)
    y1, y2 = c(x)
    torch.testing.assert_close(y1, x + 1)
    torch.testing.assert_close(y2, x + 1)


def test_no_return_in_place_gives_none(programs):
    c = programs("add", ADD, num_return_types=0)
    assert c.has_return is False
    a = torch.ones(64, 32)
    out = torch.zeros(64, 32)
    assert c(a, a, out) is None
    assert torch.all(out == 2)


def test_numpy_in_numpy_out(programs):
    c = programs("chain", ADD)
    a = np.random.rand(64, 32).astype(np.float32)
    b = np.random.rand(64, 32).astype(np.float32)
    out = c(a, b)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, a + 2 * b, rtol=1e-6)


def test_scalar_parameter(programs):
    c = programs("scale", [tensor("a", [16]), tensor("out", [16], "Out"), scalar("alpha", "fp32")])
    a = torch.arange(16, dtype=torch.float32)
    out = torch.zeros(16)
    c(a, out, 2.5)
    torch.testing.assert_close(out, a * 2.5)
    # return style puts the scalar after the remaining tensors
    torch.testing.assert_close(c(a, -1.0), -a)
    with pytest.raises(TypeError, match="alpha"):
        c(a, out, "2.5")
    with pytest.raises(TypeError, match="alpha"):
        c(a, out, torch.ones(1))


def test_dynamic_dims(programs):
    c = programs("add", [tensor("a", [-1, 32]), tensor("b", [-1, 32]), tensor("out", [-1, 32], "Out")])
    for rows in (3, 17):
        a, b = torch.randn(rows, 32), torch.randn(rows, 32)
        out = torch.empty(rows, 32)
        c(a, b, out)
        torch.testing.assert_close(out, a + b)
    with pytest.raises(TypeError, match="dynamic"):
        c(a, b)


def test_argument_checks_name_the_parameter(programs):
    c = programs("add", ADD)
    a = torch.randn(64, 32)
    with pytest.raises(ValueError, match=r"'b'.*\[64, 32\].*\[32, 64\]"):
        c(a, torch.randn(32, 64), torch.zeros(64, 32))
    with pytest.raises(TypeError, match=r"'out'.*fp32.*fp16"):
        c(a, a, torch.zeros(64, 32, dtype=torch.float16))
    with pytest.raises(ValueError, match="'a'.*contiguous"):
        c(torch.randn(32, 64).t(), a, torch.zeros(64, 32))
    with pytest.raises(TypeError, match="'b'.*list"):
        c(a, [1.0] * 32, torch.zeros(64, 32))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        c(a)
    ro = np.zeros((64, 32), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="'out'.*read-only"):
        c(a.numpy(), a.numpy(), ro)


def test_same_tensor_twice_is_ordered(programs):
    """alias(a, b, out, out2): out = a + 1 after 30 ms; out2 = b + 1. Passing out as b
    too makes the second task a reader of the first one's output (RAW)."""
    params = [tensor("a", [4, 4]), tensor("b", [4, 4]), tensor("out", [4, 4], "Out"),
              tensor("out2", [4, 4], "Out")]
    c = programs("alias", params)
    a = torch.full((4, 4), 5.0)
    shared = torch.zeros(4, 4)
    out2 = torch.zeros(4, 4)
    with ChipWorker(RunConfig()) as w:
        c(a, shared, shared, out2)
        t0, t1 = w.last_run.tasks
    assert t1.deps == (0,) and t1.start_ns >= t0.end_ns
    assert torch.all(shared == 6) and torch.all(out2 == 7)
    # without aliasing the two tasks are independent
    with ChipWorker(RunConfig()) as w:
        c(a, torch.zeros(4, 4), torch.zeros(4, 4), out2)
        assert w.last_run.tasks[1].deps == ()


def test_orchestration_errors(programs):
    two = [tensor("x", [8, 8]), tensor("y", [8, 8], "Out")]
    with pytest.raises(OrchestrationError, match=r"view: dim 0 window \[9, 17\)"):
        programs("bad_view", two)(torch.zeros(8, 8))
    with pytest.raises(OrchestrationError, match="status 7"):
        programs("status", two)(torch.zeros(8, 8))
    with pytest.raises(OrchestrationError, match="scope"):
        programs("unbalanced", two)(torch.zeros(8, 8))
    with pytest.raises(OrchestrationError, match="block table entry 7 is past the cache"):
        programs("says_why", two)(torch.zeros(8, 8))      # its reason, not just a status


def test_int64_probe_sees_caller_memory(programs):
    c = programs("probe", [tensor("x", [4, 4]), tensor("out", [4], "Out", "int64")])
    x = torch.zeros(4, 4)
    out = c(x)
    assert out.dtype == torch.int64
    assert out.tolist() == [x.data_ptr(), 2, 4, 0]   # no copy: the kernel saw x itself
