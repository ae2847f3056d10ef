"""The Compiling page's quickstart, as a user writes it (annotations evaluated, no
`from __future__ import annotations`), with the platform filled in."""
import pytest

pl = pytest.importorskip("pypto.language")
if getattr(pl, "jit", None) is None:                      # pragma: no cover
    pytest.skip("pl.jit is not exposed by pypto.language yet", allow_module_level=True)

import torch  # noqa: E402

from jit_helpers import compile_facade  # noqa: E402
from pypto.runtime import RunConfig  # noqa: E402

CFG = RunConfig(platform="a2a3sim")
torch.manual_seed(0)
A = torch.randn(128, 128, dtype=torch.float32)
B = torch.randn(128, 128, dtype=torch.float32)


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
    return out


def test_quickstart_as_written(tmp_path, monkeypatch):
    compile_facade()
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    add.cache_clear()

    out = torch.zeros(128, 128, dtype=torch.float32)
    compiled = add.compile(A, B, out, config=CFG)

    print("artifacts in:", compiled.output_dir)
    assert compiled.platform == CFG.platform
    assert compiled.param_names == ["a", "b", "out"]

    with pytest.raises(TypeError, match="got an unexpected keyword argument"):
        add.compile(skip_ptoas=True)
    assert add.compile(A, B, out, config=CFG) is compiled


def test_frontend_dump_points_at_the_user_file(tmp_path, monkeypatch):
    compile_facade()
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    add.cache_clear()
    out = torch.zeros(128, 128, dtype=torch.float32)
    compiled = add.compile(A, B, out, config=RunConfig(platform="a2a3sim", dump_passes=True))
    text = (compiled.output_dir / "passes_dump" / "00_frontend.py").read_text()
    line = next(i for i, ln in enumerate(open(__file__).read().splitlines(), 1)
                if ln.strip() == "out[:] = pl.add(a, b)")
    assert f"# @test_jit_quickstart_page.py:{line}:9" in text
    assert "def add(self, a: pl.Tensor[[128, 128], pl.FP32]" in text
