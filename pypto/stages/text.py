"""What every stage that reads or writes a program shares: the printed program as
its canonical bytes, and warnings rendered as text."""
from __future__ import annotations

from pypto.diagnostics import render, warnings
from pypto.ir.printer import print_program
from pypto.language import parse


def parse_bytes(data: bytes):
    return parse(data.decode("utf-8"), filename="<ir>")


def print_bytes(prog, explicit: bool = False) -> bytes:
    return print_program(prog, explicit=explicit).encode("utf-8")


def warnings_bytes(prog, diag: dict) -> bytes:
    return render(warnings(prog, frozenset(diag["disabled"]))).encode("utf-8")
