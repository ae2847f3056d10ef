"""pl.tile.random / pl.random (issue 11.5, a5 only): counter-based pseudo-random words
(pto.trandom; the simulator runs Philox4x32 with 7 or 10 rounds, element p taking word
p % 4 of the block for counter + p / 4). Checked against Random123's known answer, for
determinism, spread and the valid region; a2a3 has no such op."""
from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.errors import CodegenError, TypeCheckError

SRC = """
import pypto.language as pl

@pl.program
class R:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, o: pl.Out[pl.Tensor[[8, 128], pl.{DT}]],
          o2: pl.Out[pl.Tensor[[8, 128], pl.{DT}]]) -> pl.Tensor[[8, 128], pl.{DT}]:
        a = pl.tile.random({SEEDS}, [8, 128]{KW})
        b = pl.tile.random({SEEDS}, [8, 128]{KW})
        pl.store(a, [0, 0], o)
        return pl.store(pl.sub(a, b), [0, 0], o2)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, o: pl.Out[pl.Tensor[[8, 128], pl.{DT}]],
             o2: pl.Out[pl.Tensor[[8, 128], pl.{DT}]]) -> pl.Tensor[[8, 128], pl.{DT}]:
        return self.k(o, o2)
"""


def _run(tmp_path, monkeypatch, seeds="0, 0, 0, 0, 0, 0", kw="", dtype="UINT32", platform="a5sim"):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = SRC.replace("{SEEDS}", seeds).replace("{KW}", kw).replace("{DT}", dtype)
    run = ir.compile(pl.parse(src, filename="/u/r.py"), output_dir=tmp_path / "out", platform=platform)
    o = torch.zeros(8, 128, dtype=torch.uint32 if dtype == "UINT32" else torch.int32)
    o2 = torch.ones_like(o)
    run(o, o2)
    return o.view(torch.int32).to(torch.int64) & 0xFFFFFFFF, o2


def test_philox_4x32_10_known_answer(tmp_path, monkeypatch):
    """Random123's philox4x32_10 of counter 0, key 0."""
    words, diff = _run(tmp_path, monkeypatch)
    assert words.flatten()[:4].tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert not diff.any()                                    # the same seeds, the same tile


def test_the_words_spread_and_the_seeds_matter(tmp_path, monkeypatch):
    a, _ = _run(tmp_path / "a", monkeypatch, seeds="0x1234, 0x5678, 1, 2, 3, 4")
    b, _ = _run(tmp_path / "b", monkeypatch, seeds="0x1234, 0x5678, 1, 2, 3, 5")
    c, _ = _run(tmp_path / "c", monkeypatch, seeds="0x1234, 0x5678, 1, 2, 3, 4", kw=", rounds=7")
    assert len(set(a.flatten().tolist())) == 1024
    assert 0.45 < (a.double() / 2 ** 32).mean().item() < 0.55
    assert (a != b).float().mean() > 0.99 and (a != c).float().mean() > 0.99


def test_int32_words(tmp_path, monkeypatch):
    words, diff = _run(tmp_path, monkeypatch, kw=", dtype=pl.INT32", dtype="INT32")
    assert words.flatten()[:4].tolist() == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert not diff.any()


def test_a2a3_has_no_random(tmp_path, monkeypatch):
    with pytest.raises(CodegenError, match=r"exists on a5 only, not a2a3"):
        _run(tmp_path, monkeypatch, platform="a2a3sim")


def test_typed_errors():
    src = SRC.replace("{DT}", "UINT32").replace("{SEEDS}", "0, 0, 0, 0, 0, 0")
    with pytest.raises(TypeCheckError, match=r"rounds is 7 or 10, got 8"):
        pl.parse(src.replace("{KW}", ", rounds=8"), filename="/u/r.py")
    with pytest.raises(TypeCheckError, match=r"the values are uint32 or int32"):
        pl.parse(src.replace("{KW}", ", dtype=pl.FP32"), filename="/u/r.py")
