"""The files of a hand-written kernel (`@pl.function(external_source=...)`): its entry
.cpp and every file it includes with `#include "..."` that exists next to the including
file, transitively -- the sources its build reads, and so what its build key covers
(an edit to a header it includes rebuilds it). Paths are relative to the deepest folder
holding all of them, so the build sees the same layout wherever the tree is."""
from __future__ import annotations

import os
import re

_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.M)
MAX_FILES = 512


def sources(entry: str) -> list[tuple[str, bytes]]:
    """[(relative path, bytes)], the entry first, then the rest in sorted order."""
    entry = os.path.realpath(entry)
    found: dict[str, bytes] = {}
    todo = [entry]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        with open(path, "rb") as f:
            found[path] = f.read()
        if len(found) > MAX_FILES:
            raise ValueError(f"{entry} includes more than {MAX_FILES} files")
        for inc in _INCLUDE.findall(found[path]):
            cand = os.path.realpath(os.path.join(os.path.dirname(path), inc.decode("utf-8", "replace")))
            if os.path.isfile(cand) and cand not in found:
                todo.append(cand)
    root = os.path.commonpath([os.path.dirname(p) for p in found])
    rel = {p: os.path.relpath(p, root).replace(os.sep, "/") for p in found}
    rest = sorted((p for p in found if p != entry), key=lambda p: rel[p])
    return [(rel[p], found[p]) for p in [entry] + rest]
