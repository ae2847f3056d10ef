"""Atomic file publishing: temp file in the same filesystem, fsync, os.replace.

A reader of the destination sees nothing, the old file, or the whole new file --
never a prefix, even if the writer is killed at any instruction.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable

from .names import new_hasher

CHUNK = 1 << 20


class Mismatch(Exception):
    """Content being copied did not hash to the expected digest."""


def write_temp(chunks: Iterable[bytes], tmp_dir: Path, mode: int = 0o644,
               durable: bool = True) -> tuple[str, str]:
    """Write `chunks` to a fresh temp file in `tmp_dir` (fsynced if durable); return
    (path, digest)."""
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=tmp_dir, prefix=".tmp-")
    try:
        h = new_hasher()
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                h.update(chunk)
                f.write(chunk)
            f.flush()
            os.fchmod(f.fileno(), mode)  # mkstemp creates 0o600
            if durable:
                os.fsync(f.fileno())
        return tmp, h.hexdigest()
    except BaseException:
        discard(tmp)
        raise


def publish(chunks: Iterable[bytes], dest: Path, tmp_dir: Path, mode: int = 0o644,
            expect: str | None = None, durable: bool = True) -> str:
    """Write `chunks` to `dest` atomically and return their digest.

    With `expect`, raise Mismatch and leave `dest` untouched if the content does
    not hash to it: a verified copy in a single pass over the data.
    """
    tmp, digest = write_temp(chunks, tmp_dir, mode, durable)
    try:
        if expect is not None and digest != expect:
            raise Mismatch(digest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
    except BaseException:
        discard(tmp)
        raise
    return digest


def discard(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_chunks(f, size: int = CHUNK):
    while chunk := f.read(size):
        yield chunk
