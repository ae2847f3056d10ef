"""The @pl.jit call fast path (pypto.jit.call_cache): a repeated call reuses its
CompiledProgram without rebuilding the spec, and still sees a module constant change."""
import sys

import torch

import pypto.language as pl

SCALE = 2.0


@pl.jit
def scaled(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(a, SCALE)
    return out


def test_repeated_calls_reuse_the_program_and_see_a_changed_constant(monkeypatch):
    a = torch.randn(16, 16)
    out = torch.zeros(16, 16)
    scaled(a, out)
    torch.testing.assert_close(out, 2 * a)
    builds = []
    build = type(scaled)._build

    def counting(self, *args, **kwargs):
        builds.append(1)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(type(scaled), "_build", counting)
    scaled(a, out)                                   # served by the fast path
    assert builds == []
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    scaled(a, out)                                   # the constant changed: built again
    assert builds == [1]
    torch.testing.assert_close(out, 3 * a)
    b = torch.randn(16, 32)
    torch.testing.assert_close(scaled(b, torch.zeros(16, 32)), 3 * b)   # another shape
    assert builds == [1, 1] and len(scaled._calls) == 2     # (the 16x16 entry was replaced)
