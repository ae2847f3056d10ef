"""`continue` in loop bodies and tensors written in a loop or an if (issue 11.7): the rest
of the body moves under the branches that fall through (pypto.language.parser.continues),
and a name first bound to a store into tensor c (`out = pl.store(t, offs, c)`) is c, so it
has a value after the loop or if. On the simulator against torch."""
from __future__ import annotations

import ast

import torch

import pypto.language as pl
from pypto import ir
from pypto.language.parser.continues import without_continue

KERNEL = """
import pypto.language as pl

@pl.program
class C:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[256, 64], pl.FP32],
          c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(4):
{BODY}
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 64], pl.FP32], b: pl.Tensor[[256, 64], pl.FP32],
             c: pl.InOut[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        c = self.k(a, b, c)
        return c
"""

STORE = """\
            ta = pl.load(a, [i * 64, 0], [64, 64])
            tb = pl.load(b, [i * 64, 0], [64, 64])
            out = pl.store({EXPR}, [i * 64, 0], c)"""


def _run(body, tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "store"))
    src = KERNEL.replace("{BODY}", body)
    run = ir.compile(pl.parse(src, filename="/u/c.py"), output_dir=tmp_path / "out", platform="a2a3sim")
    a, b = torch.randn(256, 64), torch.randn(256, 64)
    c = torch.full((256, 64), 7.0)
    run(a, b, c)
    return a, b, c


def test_continue_skips_the_rest_of_the_body(tmp_path, monkeypatch):
    body = "            if i % 2 != 0:\n                continue\n" + STORE.replace("{EXPR}", "pl.add(ta, tb)")
    a, b, c = _run(body, tmp_path, monkeypatch)
    want = torch.full((256, 64), 7.0)
    for i in (0, 2):
        want[i * 64:(i + 1) * 64] = a[i * 64:(i + 1) * 64] + b[i * 64:(i + 1) * 64]
    assert torch.equal(c, want)


def test_continue_in_an_else_and_in_a_nested_if(tmp_path, monkeypatch):
    body = ("            if i == 0:\n"
            "                out = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], c)\n"
            "            else:\n"
            "                if i == 2:\n"
            "                    continue\n"
            + STORE.replace("{EXPR}", "pl.sub(ta, tb)"))
    a, b, c = _run(body, tmp_path, monkeypatch)
    want = torch.full((256, 64), 7.0)
    want[0:64] = a[0:64] - b[0:64]          # i == 0: the store in the if, then the rest
    for i in (1, 3):
        want[i * 64:(i + 1) * 64] = a[i * 64:(i + 1) * 64] - b[i * 64:(i + 1) * 64]
    assert torch.equal(c, want)


def test_a_tensor_stored_into_in_a_loop_is_that_tensor_after_it(tmp_path, monkeypatch):
    a, b, c = _run(STORE.replace("{EXPR}", "pl.mul(ta, tb)"), tmp_path, monkeypatch)
    assert torch.equal(c, a * b)


def test_the_rewrite_of_the_syntax_tree():
    loop = ast.parse("for i in r:\n    x = 1\n    if p:\n        y = 2\n        continue\n"
                     "    elif q:\n        continue\n    z = 3\n    w = 4\n").body[0]
    got = ast.unparse(ast.Module(without_continue(loop.body), []))
    assert got == ("x = 1\nif p:\n    y = 2\nelif q:\n    pass\nelse:\n    z = 3\n    w = 4")
    plain = ast.parse("for i in r:\n    x = 1\n").body[0]
    assert without_continue(plain.body) is plain.body
