"""What every stage that reads or writes a program shares: the printed program as
its canonical bytes, and warnings rendered as text.

A chain of stages in one process hands each program on as its printed text (the
text is the artifact, its digest the key); parsing that text again is most of what
a pass step costs. So `print_bytes` remembers the program it printed, by its text,
and the next `parse_bytes` of exactly that text takes the program instead of
parsing: the printed form is exact (tests/stages/test_text_memo.py compiles every
example both ways and compares every artifact byte for byte). An entry is used
once (passes rewrite their input in place), and the memo is bounded."""
from __future__ import annotations

import threading
from collections import OrderedDict

from pypto.ir.printer import PLD_IMPORT, print_program
from pypto.language import parse

MEMO_ENTRIES = 512               # enough for one pass over every function of a big program
_memo: OrderedDict[bytes, object] = OrderedDict()
_lock = threading.Lock()
enabled = True                   # tests switch it off to compare against real parses


def parse_text(data: bytes):
    """Parse printed IR, always."""
    return parse(data.decode("utf-8"), filename="<ir>")


def parse_bytes(data: bytes):
    """The program printed as `data`: the one this process printed, if not yet taken."""
    with _lock:
        prog = _memo.pop(data, None)
    if type(prog) is _Copy:
        return prog.make()
    return prog if prog is not None else parse_text(data)


class _Copy:
    """A memo entry made on demand: a copy of a program someone else keeps."""
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def remember(data: bytes, prog) -> None:
    """`prog` prints as `data` and nothing will change it: the next parse of `data`
    may take it."""
    if not enabled:
        return
    with _lock:
        _memo[data] = prog
        _memo.move_to_end(data)
        while len(_memo) > MEMO_ENTRIES:
            _memo.popitem(last=False)


def remember_copy(data: bytes, prog) -> None:
    """`prog` prints as `data` but is not ours to change (the user's program): the
    next parse of `data` may take a structural copy of it, made then."""
    def make():
        from pypto.ir.clone import clone
        return clone(prog)
    remember(data, _Copy(make))


def forget() -> None:
    with _lock:
        _memo.clear()


def print_bytes(prog, explicit: bool = False) -> bytes:
    return print_program(prog, explicit=explicit).encode("utf-8")


def function_blocks(text: str) -> tuple[list[str], dict[str, str]]:
    """(dynamic-dim lines, function name -> its printed block) of a printed program.
    The printer prints each function on its own (names, indentation), so a block
    means the same in any program that holds it."""
    head, _, body = text.partition("\n@pl.program\nclass ")
    dyns = [ln for ln in head.splitlines() if " = pl.dynamic(" in ln]
    blocks = {}
    for part in body.split("\n    @pl.function")[1:]:
        block = "    @pl.function" + part.rstrip("\n")
        name = block.split("\n    def ", 1)[1].split("(", 1)[0]
        blocks[name] = block
    return dyns, blocks


def single_function(name: str, block: str) -> bytes:
    """The text of program `name` holding one function, printed as `block`, that
    names no dynamic dim: what printing that program gives."""
    pld = f"{PLD_IMPORT}\n" if "pld." in block else ""
    return (f"# pypto.program: {name}\nimport pypto.language as pl\n{pld}\n@pl.program\n"
            f"class {name}:\n{block}\n").encode("utf-8")


def join_functions(name: str, parts: list[tuple[str, bytes]]) -> bytes:
    """The text of program `name` holding, in order, function f of each printed
    program (f, text): what printing the joined program gives, without a parse."""
    dyns, blocks = set(), []
    for fname, text in parts:
        d, b = function_blocks(text.decode("utf-8"))
        dyns.update(d)
        blocks.append(b[fname])
    out = [f"# pypto.program: {name}", "import pypto.language as pl"]
    out += [PLD_IMPORT] if any("pld." in b for b in blocks) else []
    out.append("")
    if dyns:
        out += sorted(dyns, key=lambda ln: ln.split(" = ", 1)[0]) + [""]
    out += ["@pl.program", f"class {name}:", "\n\n".join(blocks)]
    return ("\n".join(out) + "\n").encode("utf-8")


def warnings_bytes(prog, diag: dict) -> bytes:
    from pypto.diagnostics import render, warnings
    return render(warnings(prog, frozenset(diag["disabled"]))).encode("utf-8")
