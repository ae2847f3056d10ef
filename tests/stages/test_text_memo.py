"""The in-process hand-on of printed programs (pypto.stages.text): a stage takes the
program the previous stage printed instead of parsing its text. That is only sound
if the printed text is exact, so every example is compiled both ways, in separate
stores, and every artifact must come out byte-identical."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pypto.stages import text

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "graph"))

from examples import harness  # noqa: E402
from graph_helpers import artifacts, write_program, import_file  # noqa: E402

EXAMPLES = ["elementwise", "softmax", "ffn_program", "matmul_acc", "dynamic_rows", "row_chunks",
            "layernorm", "activations", "ffn"]


def _compile(mod, out: Path, store: Path, **kw):
    from pypto_cache import Store
    from pypto_pipeline.driver import build
    from pypto.ir.compiling import build_options
    src, from_spec = harness.source(mod)
    name = mod.ENTRY.__name__ if hasattr(mod, "ENTRY") else mod.PROGRAM.name
    build(name, src, build_options(platform="a2a3sim", skip_ptoas=True, **kw), out,
          from_spec=from_spec, store=Store(store), jobs=1)
    return artifacts(out)


@pytest.fixture
def parses(monkeypatch):
    """Counts real parses of printed IR."""
    calls = []
    real = text.parse_text

    def counting(data):
        calls.append(len(data))
        return real(data)
    monkeypatch.setattr(text, "parse_text", counting)
    return calls


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("dump", ["CONCISE", "EXPLICIT"])
def test_handing_programs_on_gives_the_same_artifacts(name, dump, tmp_path, monkeypatch, parses):
    mod = harness.load(name)
    monkeypatch.setattr(text, "enabled", False)
    parsed = _compile(mod, tmp_path / "parsed", tmp_path / "s1", dump_passes=dump)
    n_parsed = len(parses)
    monkeypatch.setattr(text, "enabled", True)
    handed = _compile(mod, tmp_path / "handed", tmp_path / "s2", dump_passes=dump)
    assert handed.keys() == parsed.keys()
    for path in parsed:
        assert handed[path] == parsed[path], path
    assert len(parses) - n_parsed < n_parsed     # and it saved parses
    assert not text._memo                        # nothing kept after the compile


def test_many_kernels_and_an_edit(tmp_path, monkeypatch, parses):
    """The 8-kernel program, then one kernel edited, both ways."""
    prog = tmp_path / "prog.py"
    got = {}
    for on in (False, True):
        monkeypatch.setattr(text, "enabled", on)
        store = tmp_path / f"s{on}"
        write_program(prog, 8)
        _compile(_Prog(import_file(prog)), tmp_path / f"a{on}", store)
        write_program(prog, 8, ops={"k3": "pl.sub(pl.mul(ta, tb), ta)"})
        got[on] = _compile(_Prog(import_file(prog)), tmp_path / f"b{on}", store)
    assert got[True] == got[False]


class _Prog:
    def __init__(self, mod):
        self.PROGRAM = mod.PROGRAM


def test_an_entry_is_taken_once():
    prog = object()
    text.remember(b"x", prog)
    assert text.parse_bytes(b"x") is prog
    text.remember(b"y", object())
    text.forget()
    assert not text._memo


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(text, "MEMO_ENTRIES", 3)
    for i in range(5):
        text.remember(b"%d" % i, object())
    assert list(text._memo) == [b"2", b"3", b"4"]
    text.forget()
