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

from pypto.diagnostics import render, warnings
from pypto.ir.printer import print_program
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
    return prog if prog is not None else parse_text(data)


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


def forget() -> None:
    with _lock:
        _memo.clear()


def print_bytes(prog, explicit: bool = False) -> bytes:
    return print_program(prog, explicit=explicit).encode("utf-8")


def warnings_bytes(prog, diag: dict) -> bytes:
    return render(warnings(prog, frozenset(diag["disabled"]))).encode("utf-8")
