"""Programs of several kernels on a2a3sim: an FFN (matmul -> SiLU -> matmul) as three
calls of @pl.jit.incore kernels from a @pl.jit entry with pl.create_tensor intermediates,
and the same as a @pl.program with InCore and Orchestration methods; a @pl.jit.inline
helper spliced into its caller."""
import json
from pathlib import Path

import torch

import pypto.language as pl

from prog_helpers import CFG, check_example, close, randn


def test_ffn_jit_three_kernel_calls():
    compiled = check_example("ffn")
    config = (Path(compiled.output_dir) / "kernel_config.py").read_text()
    assert '"core_type": "aic"' in config and '"core_type": "aiv"' in config


def test_ffn_program_with_ir_compile(tmp_path):
    check_example("ffn_program", tmp_path / "ffn")
    meta = json.loads((tmp_path / "ffn" / "compiled_meta.json").read_text())
    assert [p["name"] for p in meta["params"]] == ["hidden", "w_up", "w_down", "out"]
    assert sorted(p.name for p in (tmp_path / "ffn" / "ptoas").glob("*.pto")) == ["matmul.pto", "silu.pto"]


@pl.jit.inline
def gated(x: pl.Tensor, g: pl.Tensor):
    return pl.mul(x, pl.relu(g))


@pl.jit
def inline_dep(x: pl.Tensor, g: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = gated(x, g)
    return y


def test_jit_inline_function_is_spliced_into_its_caller():
    x, g = randn(64, 64, seed=70), randn(64, 64, seed=71)
    y = torch.zeros(64, 64)
    inline_dep(x, g, y, config=CFG)
    close(y, x * torch.relu(g), 0, 0)


@pl.jit
def staged_matmul_bias(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="cube_only"):
        acc = pl.matmul(a, b, out_dtype=pl.FP32)         # leaves its region ...
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="vector_only"):
        out[:] = pl.add(acc, bias)                        # ... and is read by the next
    return out


def test_a_tensor_computed_in_one_region_is_read_by_the_next():
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(64, 32, generator=g).half(), torch.randn(32, 64, generator=g).half()
    bias, out = torch.randn(64, 64, generator=g), torch.zeros(64, 64)
    staged_matmul_bias(a, b, bias, out)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
