"""@pl.jit end to end through the real compile facade (skipped until it has landed)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from jit_helpers import compile_facade, pl
from pypto.runtime.config import RunConfig

CFG = RunConfig(platform="a2a3sim")


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit
def add_ret(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


@pl.jit.incore
def matmul_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    ta = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    tb = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
    acc = pl.matmul(pl.move(ta, pl.Mem.Left), pl.move(tb, pl.Mem.Right))
    pl.store(acc, [0, 0], c)
    return c


@pl.jit.incore
def bias_kernel(x: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [64, 64])
    bv = pl.load(bias, [0, 0], [1, 64])
    pl.store(pl.col_expand_add(t, bv), [0, 0], y)
    return y


@pl.jit
def fused_linear(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
    mm_out = pl.create_tensor([64, 64], dtype=pl.FP32)
    mm_out = matmul_kernel(a, b, mm_out)
    out = bias_kernel(mm_out, bias, out)
    return out


@pl.jit
def scale_rows(x: pl.Tensor, out: pl.Out[pl.Tensor], n: pl.INDEX, alpha: pl.FP32):
    for i in pl.range(n):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [i * 16, 0], [16, 64])
            pl.store(pl.mul(t, alpha), [i * 16, 0], out)
    return out


@pytest.fixture
def build_dir(tmp_path, monkeypatch):
    compile_facade()
    out = tmp_path / "build"
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(out))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for fn in (add, add_ret, fused_linear, scale_rows):
        fn.cache_clear()
    return out


def test_quickstart_compile(build_dir):
    torch.manual_seed(0)
    A = torch.randn(128, 128, dtype=torch.float32)
    B = torch.randn(128, 128, dtype=torch.float32)
    out = torch.zeros(128, 128, dtype=torch.float32)
    compiled = add.compile(A, B, out, config=CFG)
    assert Path(compiled.output_dir).is_dir()
    assert Path(compiled.output_dir).name.startswith("_jit_add")
    assert compiled.platform == CFG.platform
    assert compiled.param_names == ["a", "b", "out"]
    assert add.compile(A, B, torch.zeros(128, 128), config=CFG) is compiled
    with pytest.raises(TypeError, match="got an unexpected keyword argument"):
        add.compile(skip_ptoas=True)


def test_quickstart_runs_in_place_and_return_style(build_dir):
    torch.manual_seed(1)
    A = torch.randn(128, 128)
    B = torch.randn(128, 128)
    out = torch.zeros(128, 128)
    add(A, B, out, config=CFG)
    assert torch.allclose(out, A + B)
    with pytest.raises(TypeError, match="missing Out argument 'out'"):
        add(A, B, config=CFG)                # a bare Out has no shape to allocate
    got = add_ret(A, B, config=CFG)          # a fully annotated one does
    assert torch.allclose(got, A + B)


def test_lower_writes_nothing(build_dir):
    A = torch.zeros(128, 128)
    prog = add.lower(A, A, A, config=CFG)
    names = [f.name for f in prog.functions]
    assert "add" in names and any(n.startswith("add_incore") for n in names)
    assert not build_dir.exists() or not any(build_dir.iterdir())


def test_fused_linear_with_incore_deps(build_dir):
    torch.manual_seed(2)
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    bias = torch.randn(1, 64)
    out = torch.zeros(64, 64)
    fused_linear(a, b, bias, out, config=CFG)
    assert torch.allclose(out, a @ b + bias, rtol=1e-3, atol=1e-3)


def test_scalar_parameters_are_specialized(build_dir):
    torch.manual_seed(3)
    x = torch.randn(64, 64)
    out = torch.zeros(64, 64)
    scale_rows(x, out, 4, 0.5, config=CFG)
    assert torch.allclose(out, x * 0.5)
    first = scale_rows.compile(x, out, 4, 0.5, config=CFG)
    assert scale_rows.compile(x, out, 4, 2.0, config=CFG) is not first


def test_codegen_only_compiles_and_does_not_run(tmp_path):
    from pypto.runtime import run
    from pypto.runtime.compiled import CompiledProgram
    a, b, out = torch.randn(128, 128), torch.randn(128, 128), torch.zeros(128, 128)
    cfg = RunConfig(platform="a2a3sim", codegen_only=True, save_kernels_dir=str(tmp_path / "k"))
    got = add(a, b, out, config=cfg)
    assert isinstance(got, CompiledProgram) and torch.equal(out, torch.zeros(128, 128))
    assert list((tmp_path / "k" / "kernels").rglob("*.so"))       # every artifact built
    assert isinstance(run(add, a, b, out, config=cfg), CompiledProgram)
    assert torch.equal(out, torch.zeros(128, 128))
    got(a, b, out)                                                  # and it runs when called
    torch.testing.assert_close(out, a + b)
