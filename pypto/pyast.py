"""`ast.parse` that is safe to call from several threads at once.

CPython 3.11 before 3.11.8 shares the AST converter's recursion-depth counter
between threads, so two parses running at once (the build graph runs stage tasks
in threads) can fail with "SystemError: AST constructor recursion depth mismatch"
(cpython issue 106905). Parses are short; one lock costs nothing measurable.
"""
from __future__ import annotations

import ast
import sys
import threading

_LOCK = threading.Lock()
_BROKEN = sys.version_info < (3, 11, 8) or (3, 12) <= sys.version_info < (3, 12, 1)


def parse(source, filename: str = "<unknown>", **kw) -> ast.Module:
    if not _BROKEN:
        return ast.parse(source, filename=filename, **kw)
    with _LOCK:
        return ast.parse(source, filename=filename, **kw)
