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


@pl.jit
def shifted(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, 1.0)
    return out


def test_clearing_the_specialization_cache_forgets_the_call_too():
    """`fn._cache.clear()` (how PyPTO's tests start from a cold cache): the next call
    compiles again and holds its program in `_cache`, rather than reusing the call."""
    a, out = torch.randn(16, 16), torch.zeros(16, 16)
    shifted(a, out)
    first = next(iter(shifted._cache.values()))
    shifted._cache.clear()
    shifted(a, out)
    torch.testing.assert_close(out, a + 1)
    assert len(shifted._cache) == 1 and next(iter(shifted._cache.values())) is not first
    shifted(a, out)                                  # the fast path again, same program
    assert len(shifted._cache) == 1
