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
    from pypto.ir.compiling import build_options, graph_input
    if hasattr(mod, "ENTRY"):
        src, from_spec = harness.source(mod)
        name, opts = mod.ENTRY.__name__, build_options(platform="a2a3sim", skip_ptoas=True, **kw)
    else:      # as ir.compile lays it out: the frontend may take a copy of the program
        name, src, opts, from_spec = graph_input(mod.PROGRAM, platform="a2a3sim",
                                                 skip_ptoas=True, **kw)
    build(name, src, opts, out, from_spec=from_spec, store=Store(store), jobs=1)
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


def test_the_frontend_takes_a_copy_of_the_users_program(tmp_path, parses):
    """ir.compile hands the graph a copy of the program it was given (no parse of
    its text), and the passes, which rewrite in place, leave the user's one alone."""
    from pypto import ir
    from pypto.ir.printer import print_program
    prog = import_file(write_program(tmp_path / "prog.py", 8)).PROGRAM
    before = print_program(prog, explicit=True)
    main = prog.get("main")
    body, first = list(main.body), main.body[0].body[0]
    ir.compile(prog, output_dir=str(tmp_path / "out"), platform="a2a3sim", skip_ptoas=True)
    assert len(print_program(prog).encode()) not in parses   # the frontend did not parse
    assert print_program(prog, explicit=True) == before
    assert main.body == body and main.body[0].body[0] is first
    assert prog.get("main") is main and len(prog.functions) == 1


def test_a_clone_shares_nothing_mutable_and_keeps_var_identity(tmp_path):
    from pypto.ir.clone import clone
    from pypto.ir.equal import assert_structural_equal
    from pypto.ir.nodes import Var
    from pypto.ir.visit import walk
    prog = import_file(write_program(tmp_path / "prog.py", 3)).PROGRAM
    copy = clone(prog)
    assert_structural_equal(copy, prog)
    f, g = prog.get("main"), copy.get("main")
    assert g is not f and g.body is not f.body and g.params[0].var is not f.params[0].var
    old_ids = {id(s) for s in walk(f.body)}
    assert not old_ids & {id(s) for s in walk(g.body)}
    # a Var read in two places of the original is one Var in the copy too
    a = g.params[0].var
    loads = [s for s in walk(g.body) if getattr(getattr(s, "value", None), "op", "") == "tile.load"
             and isinstance(s.value.args[0], Var) and s.value.args[0].name == a.name]
    assert len(loads) == 3 and all(s.value.args[0] is a for s in loads)


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_function_cut_from_the_text_is_what_printing_it_gives(name, tmp_path):
    """The per-function passes start from each function's part; a function calling
    nothing has its part cut from the outlined program's text (pypto.stages.text.
    single_function) rather than printed again: the bytes must be the same."""
    from pypto.ir.nodes import Program
    from pypto.ir.printer import print_program
    mod = harness.load(name)
    _compile(mod, tmp_path / "out", tmp_path / "s")
    for dump in sorted((tmp_path / "out" / "passes_dump").glob("*.py")):
        data = dump.read_bytes()
        dyns, blocks = text.function_blocks(data.decode())
        prog = text.parse_text(data)
        for f in prog.functions:
            want = print_program(Program(prog.name, [f], prog.source)).encode()
            if not dyns:
                assert text.single_function(prog.name, blocks[f.name]) == want, (dump.name, f.name)
