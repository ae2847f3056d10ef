"""Digests of code: what a stage's key says about the implementation behind it.

Kept apart from `graph` so that keying a whole compile (pipeline/served.py) imports
no more than xxhash."""
from __future__ import annotations

from pathlib import Path

import xxhash


def _field(h, text: str) -> None:
    b = text.encode("utf-8")
    h.update(len(b).to_bytes(8, "little"))
    h.update(b)


def impl_digest(*parts) -> str:
    """Digest of the code implementing a stage, from any mix of functions, classes,
    modules (their source text), paths (file bytes) and plain strings (e.g. a tool's
    version line). Compute it once per process: it reads source files."""
    h = xxhash.xxh3_128()
    for part in parts:
        if isinstance(part, Path):
            _field(h, "file")
            b = part.read_bytes()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
        elif isinstance(part, str):
            _field(h, "str")
            _field(h, part)
        else:
            import inspect
            from .graph import fn_id
            _field(h, "src:" + fn_id(part) if not inspect.ismodule(part) else "mod:" + part.__name__)
            _field(h, inspect.getsource(part))
    return h.hexdigest()
