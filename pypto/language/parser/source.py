"""Where parsed text came from, and how AST positions become user spans.

A `Source` maps an AST node to `Span(file, line, col)`: the basename of the user's file,
the line in that file and the 1-based column. Printed dumps carry the original location
of each statement as a trailing `# @file.py:LINE:COL` comment; those markers win over
the position in the dump.
"""
from __future__ import annotations

import ast

from pypto import pyast
import os
import re
from dataclasses import dataclass, field

from pypto.errors import Span

_MARKER = re.compile(r"#\s*@(.+):(\d+):(\d+)\s*$")


@dataclass
class Source:
    file: str                   # basename used in spans
    text: str                   # the text handed to ast.parse
    line_offset: int = 0        # file line = ast lineno + line_offset
    col_offset: int = 0         # columns removed by dedent
    markers: dict[int, Span] = field(default_factory=dict)   # ast lineno -> span

    def pos(self, node) -> Span:
        return Span(self.file, node.lineno + self.line_offset,
                    node.col_offset + 1 + self.col_offset)

    def marker(self, node, compound: bool = False) -> Span | None:
        """The `# @file:line:col` marker on the node's line(s), if any. A compound
        statement (for/if/with/def) has it on its header line only."""
        if not self.markers:
            return None
        first = node.lineno
        last = first if compound else (getattr(node, "end_lineno", None) or first)
        for ln in range(first, last + 1):
            s = self.markers.get(ln)
            if s is not None:
                return s
        return None

    def header_marker(self, node) -> Span | None:
        """For a def/for/if/with: the marker on the line holding the colon of its
        header (the line before its body)."""
        if not self.markers:
            return None
        body = getattr(node, "body", None)
        end = body[0].lineno - 1 if body else node.lineno
        for ln in range(node.lineno, max(end, node.lineno) + 1):
            s = self.markers.get(ln)
            if s is not None:
                return s
        return None



def scan_markers(text: str) -> dict[int, Span]:
    """Line -> span for every line ending in a `# @file:line:col` comment. A line scan,
    not tokenize (which dominated parse time): a marker must end its line, and a
    string literal cannot end a line with digits after its closing quote, so a `#`
    inside a string never matches."""
    out: dict[int, Span] = {}
    if "# @" not in text:
        return out
    for i, line in enumerate(text.splitlines(), 1):
        if "# @" in line:
            m = _MARKER.search(line)
            if m:
                out[i] = Span(m.group(1), int(m.group(2)), int(m.group(3)))
    return out


def basename(path: str) -> str:
    if path.startswith("<") and path.endswith(">"):
        return path
    return os.path.basename(path) or path


def dedent(text: str) -> tuple[str, int]:
    """Remove the common indentation of all non-blank lines; return it too."""
    lines = text.splitlines(keepends=True)
    widths = [len(ln) - len(ln.lstrip(" \t")) for ln in lines if ln.strip()]
    n = min(widths) if widths else 0
    if n == 0:
        return text, 0
    return "".join(ln[n:] if ln.strip() else ln.lstrip(" \t") for ln in lines), n


def syntax_error_span(err: SyntaxError, src_file: str, line_offset: int = 0) -> Span:
    return Span(src_file, (err.lineno or 1) + line_offset, err.offset or 1)


def parse_module(text: str, file: str) -> ast.Module:
    return pyast.parse(text, filename=file, type_comments=False)
