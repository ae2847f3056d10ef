"""Tokens of the MLIR subset ptoas reads.

Dialect types (`!pto.tile_buf<...>`) and attributes (`#pto<round_mode ROUND>`) are
single tokens with their balanced `<...>` body; types.py parses the body.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import PtoasError


@dataclass(frozen=True)
class Token:
    kind: str  # ssa sym ident int float string type attr punct eof
    text: str
    line: int
    col: int


_SIMPLE = re.compile(r"""
    (?P<ws>[ \t\r\n]+|//[^\n]*)
  | (?P<ssa>%[A-Za-z0-9_$.\-]+(?:\#[0-9]+)?)
  | (?P<sym>@[A-Za-z0-9_$.\-]+|@"[^"]*")
  | (?P<float>[-+]?[0-9]+\.[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+)
  | (?P<int>0x[0-9A-Fa-f]+|[-+]?[0-9]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_$.]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>->|[()\[\]{}<>,:=?*^+])
""", re.VERBOSE)

_DIALECT_HEAD = re.compile(r"[!#][A-Za-z0-9_.]*")
# builtin types and attributes with a <...> body (tmrgsort's status vector and its constant)
_BUILTIN_BODIES = {"vector": "type", "dense": "attr"}


def _balanced_end(text: str, start: int, line: int, col: int) -> int:
    """Index just past the '>' closing the '<' at text[start]."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch == '"':
            j = text.find('"', i + 1)
            i = len(text) if j < 0 else j
        elif ch == "<":
            depth += 1
        elif ch == ">" and text[i - 1] != "-":
            depth -= 1
            if depth == 0:
                return i + 1
        elif ch == "\n":
            break
        i += 1
    raise PtoasError("unterminated '<' in type or attribute", line=line, col=col)


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos, line, line_start = 0, 1, 0
    n = len(text)
    while pos < n:
        col = pos - line_start + 1
        ch = text[pos]
        if ch in "!#":
            m = _DIALECT_HEAD.match(text, pos)
            end = m.end()
            if end < n and text[end] == "<":
                end = _balanced_end(text, end, line, col)
            if end == pos + 1:
                raise PtoasError(f"unexpected character {ch!r}", line=line, col=col)
            tokens.append(Token("type" if ch == "!" else "attr", text[pos:end], line, col))
            pos = end
            continue
        m = _SIMPLE.match(text, pos)
        if not m:
            raise PtoasError(f"unexpected character {ch!r}", line=line, col=col)
        kind = m.lastgroup
        chunk = m.group()
        if kind == "ident" and chunk in _BUILTIN_BODIES and m.end() < n and text[m.end()] == "<":
            end = _balanced_end(text, m.end(), line, col)     # vector<4xi16>, dense<0>
            tokens.append(Token(_BUILTIN_BODIES[chunk], text[pos:end], line, col))
            pos = end
            continue
        if kind != "ws":
            tokens.append(Token(kind, chunk, line, col))
        newlines = chunk.count("\n")
        if newlines:
            line += newlines
            line_start = pos + chunk.rfind("\n") + 1
        pos = m.end()
    col = pos - line_start + 1
    tokens.append(Token("eof", "", line, col))
    return tokens
