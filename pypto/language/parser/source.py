"""Where parsed text came from, and how AST positions become user spans.

A `Source` maps an AST node to `Span(file, line, col)`: the basename of the user's file,
the line in that file and the 1-based column. Printed dumps carry the original location
of each statement as a trailing `# @file.py:LINE:COL` comment; those markers win over
the position in the dump.

Host statements print no marker (moving them must not change the canonical text). In
synthetic text (`<ir>`, `<jit>`: what build steps parse) a position on such a line maps
to the nearest *enclosing* marker instead: the closest line above it that is indented
less and carries one (its `with pl.at(...)`/loop header, else its function's `def`
line), so no error and no IR node read from build-step text names `<ir>`. The parser,
and so this module, is in every IR stage's code digest: a change here rebuilds them.
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
    _map: "SourceMap | None" = field(default=None, repr=False, compare=False)

    def pos(self, node) -> Span:
        if self.markers and is_synthetic(self.file):
            if self._map is None:
                self._map = SourceMap(self.text, self.markers)
            user = self._map.at(node.lineno)
            if user is not None:
                return user
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


def is_synthetic(file: str | None) -> bool:
    """`<ir>`, `<jit>`, `<string>`: a name for text that is not a file of the user's."""
    return bool(file) and file.startswith("<") and file.endswith(">")


class SourceMap:
    """Lines of one printed text -> user spans: a line's own marker, else the nearest
    enclosing one (see the module docstring); None when no marker encloses it."""

    def __init__(self, text: str, markers: dict[int, Span] | None = None):
        self.markers = scan_markers(text) if markers is None else markers
        self._text = text
        self._parent: list[int] | None = None
        self._if_of: dict[int, int] = {}              # `else:` line -> its `if` line
        self._memo: dict[int, Span | None] = {}

    def _parents(self) -> list[int]:
        """Per line (1-based): the line it sits in -- the closest line above it that is
        indented less (0: none; blank lines have none). An `else:` line stands for its
        `if` (the line above it on its indentation). One pass with a stack of open lines."""
        if self._parent is None:
            lines = self._text.splitlines()
            parent = [0] * (len(lines) + 1)
            stack: list[tuple[int, int]] = []          # (indent, line), indents increasing
            for n, ln in enumerate(lines, 1):
                if not ln.strip():
                    continue
                ind = len(ln) - len(ln.lstrip(" \t"))
                same = 0
                while stack and stack[-1][0] >= ind:
                    if stack[-1][0] == ind:
                        same = stack[-1][1]
                    stack.pop()
                parent[n] = stack[-1][1] if stack else 0
                if ln.strip() == "else:" and same:
                    self._if_of[n] = same
                stack.append((ind, n))
            self._parent = parent
        return self._parent

    def at(self, line: int) -> Span | None:
        if not self.markers:
            return None
        own = self.markers.get(line)
        if own is not None:
            return own
        parent = self._parents()
        if not 0 < line < len(parent):
            return None
        if line not in self._memo:
            p = parent[line]
            p = self._if_of.get(p, p)
            # a header without a marker (a host loop, an if): look further out
            self._memo[line] = None if p == 0 else self.at(p)
        return self._memo[line]


def remap_error(err, text, synthetic: str = "<ir>"):
    """Point a PyptoError whose span is a position in `text` (named `synthetic`) at the
    user's source, in place (class, message, hint and traceback kept); returns it. An
    error naming a user file, or a position no marker encloses, is left alone. The
    safety net for a build step that raises with a position in the text it parsed."""
    span = getattr(err, "span", None)
    if span is None or span.file != synthetic:
        return err
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    user = SourceMap(text).at(span.line)
    if user is None:
        return err
    err.span = user
    msg = f"{user}: error: {err.message}"
    if err.hint:
        msg += f"\n  hint: {err.hint}"
    err.args = (msg,)
    return err


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
