"""Shared by the pass tests: run passes by name, look into the result, round-trip it."""
from __future__ import annotations

import pypto.language as pl
from pypto.ir.equal import assert_structural_equal
from pypto.ir.nodes import Assign, Call, Eval, For, If, TileType, Var
from pypto.ir.visit import defs, walk
from pypto.passes import ALL_PASSES, pipeline, run_pass
from pypto.passes.base import PassOptions

PASSES = {p.name: p for p in ALL_PASSES}
ORDER = [p.name for p in ALL_PASSES]


def run(prog, *names, opts: PassOptions | None = None, verify: bool = True):
    """Run the named passes in the given order, as the build graph does (run_pass)."""
    opts = opts or PassOptions()
    done: list[str] = []
    for n in names:
        prog = run_pass(PASSES[n], prog, opts, verify, list(done))
        done.append(n)
    return prog


def upto(prog, last: str, opts: PassOptions | None = None, verify: bool = True):
    """The Default pipeline for `opts` up to and including pass `last`."""
    opts = opts or PassOptions()
    names = [p.name for p in pipeline(opts)]
    return run(prog, *names[:names.index(last) + 1], opts=opts, verify=verify)


def before(prog, name: str, opts: PassOptions | None = None):
    """The Default pipeline up to (not including) pass `name`: that pass's input."""
    opts = opts or PassOptions()
    names = [p.name for p in pipeline(opts)]
    return run(prog, *names[:names.index(name)], opts=opts)


def roundtrip(prog):
    """The printed program parses back to an equal program that prints the same."""
    text = prog.as_python()
    again = pl.parse(text, filename="<ir>")
    assert_structural_equal(prog, again)
    assert again.as_python() == text
    return again


def text(prog) -> str:
    return prog.as_python(locs=False)


def body_text(prog, fname: str) -> list[str]:
    """The statements of one function as printed lines (stripped, no locations)."""
    lines, inside = [], False
    for line in text(prog).splitlines():
        if line.strip().startswith("def "):
            inside = line.strip().startswith(f"def {fname}(")
            continue
        if line.strip().startswith("@pl.function"):
            inside = False
        if inside and line.strip():
            lines.append(line.strip())
    return lines


def fn(prog, name: str):
    f = prog.get(name)
    assert f is not None, f"no function {name!r} in {[g.name for g in prog.functions]}"
    return f


def calls(f, op: str | None = None) -> list[Call]:
    """Top-level calls of statements (Assign values and Eval exprs), in order."""
    out = []
    for s in walk(f.body):
        c = s.value if isinstance(s, Assign) else (s.expr if isinstance(s, Eval) else None)
        if isinstance(c, Call) and (op is None or c.op == op):
            out.append(c)
    return out


def assigns(f, op: str | None = None) -> list[Assign]:
    return [s for s in walk(f.body) if isinstance(s, Assign) and isinstance(s.value, Call)
            and (op is None or s.value.op == op)]


def ops(f) -> list[str]:
    return [c.op for c in calls(f)]


def loops(f) -> list[For]:
    return [s for s in walk(f.body) if isinstance(s, For)]


def ifs(f) -> list[If]:
    return [s for s in walk(f.body) if isinstance(s, If)]


def tiles(f) -> list[Var]:
    """Every tile-typed Var a function defines."""
    return [v for s in walk(f.body) for v in defs(s) if isinstance(v.type, TileType)]


def var(f, name: str) -> Var:
    for p in f.params:
        if p.var.name == name:
            return p.var
    for s in walk(f.body):
        for v in defs(s):
            if v.name == name:
                return v
    raise AssertionError(f"no variable {name!r} in {f.name}")
