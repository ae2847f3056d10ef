"""Shared bits of the @pl.jit tests: a `pl` to decorate with, and skips for the pieces
other people are still writing (the parser, the compile facade)."""
from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

from pypto.ir.nodes import DynDim
from pypto.jit import RUNTIME, jit

MARKER = re.compile(r"  # @(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+)$")


def _language():
    try:
        mod = importlib.import_module("pypto.language")
    except Exception:
        return None
    try:
        return mod if getattr(mod, "jit", None) is jit else None
    except Exception:
        return None


LANG = _language()
# Kernel modules use `from __future__ import annotations`, so only `pl.jit` and
# `pl.dynamic` are evaluated at import; without the language package a stand-in does.
pl = LANG if LANG is not None else types.SimpleNamespace(jit=jit, RUNTIME=RUNTIME,
                                                         dynamic=DynDim)


def parse_or_skip(text: str):
    lang = LANG
    if lang is None:
        try:
            lang = importlib.import_module("pypto.language")
        except Exception:
            lang = None
    if lang is None or not hasattr(lang, "parse"):
        pytest.skip("pypto.language.parse has not landed yet")
    return lang.parse(text)


def compile_facade():
    """pypto.ir.compiling once compile_jit exists; skips the test until then."""
    try:
        mod = importlib.import_module("pypto.ir.compiling")
    except ImportError:
        mod = None
    if mod is None or not hasattr(mod, "compile_jit"):
        pytest.skip("compile facade not landed")
    return mod


def where(path: str, fragment: str) -> tuple[int, int]:
    """(line, col) of the one source line of `path` that starts with `fragment`
    (after its indent), 1-based."""
    hits = [(i, line.index(fragment) + 1)
            for i, line in enumerate(Path(path).read_text().splitlines(), 1)
            if line.lstrip().startswith(fragment)]
    assert len(hits) == 1, f"{fragment!r} found {len(hits)} times in {path}"
    return hits[0]


def marker_of(line: str) -> tuple[str, int, int]:
    m = MARKER.search(line)
    assert m, f"no source marker on {line!r}"
    return m["file"], int(m["line"]), int(m["col"])


def code_lines(text: str) -> list[str]:
    """The function-body and def lines of a specialized program, markers stripped."""
    return [MARKER.sub("", line) for line in text.splitlines()]


REPO_ROOT = str(Path(__file__).resolve().parents[2])
