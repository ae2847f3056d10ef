"""Atomic file publishing: temp file in the same filesystem, fsync, os.replace.

A reader of the destination sees nothing, the old file, or the whole new file --
never a prefix, even if the writer is killed at any instruction.
"""
from __future__ import annotations

import errno
import itertools
import os
import threading
from pathlib import Path
from typing import Iterable

from .names import new_hasher

CHUNK = 1 << 20
# temp names unique across processes and hosts sharing a store: a random token per
# process (re-drawn in a forked child) and a counter; cheaper than tempfile's retries
_token = os.urandom(6).hex()
_pid = os.getpid()
_count = itertools.count()
_lock = threading.Lock()


def _temp_name(tmp_dir) -> str:
    global _token, _pid
    with _lock:
        if os.getpid() != _pid:
            _token, _pid = os.urandom(6).hex(), os.getpid()
        n = next(_count)
    return os.path.join(tmp_dir, f".tmp-{_token}-{n}")


# Objects and the artifacts made from them are read-only, as Bazel's outputs are:
# an artifact is a hard link to its object where the file system allows, and an
# edit in place would change every copy of it (and the store's).
READ_ONLY, EXECUTABLE = 0o444, 0o555
# link(2) refusals that mean "copy instead": another file system, too many links,
# a store owned by another user (protected_hardlinks), no links at all
_NO_LINK = {errno.EXDEV, errno.EMLINK, errno.EPERM, errno.EACCES, errno.ENOTSUP, errno.ENOSYS}


class Mismatch(Exception):
    """Content being copied did not hash to the expected digest."""


def write_temp(chunks: Iterable[bytes], tmp_dir: Path, mode: int = READ_ONLY,
               durable: bool = True) -> tuple[str, str]:
    """Write `chunks` to a fresh temp file in `tmp_dir` (fsynced if durable); return
    (path, digest)."""
    tmp = _temp_name(tmp_dir)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileNotFoundError:
        os.makedirs(tmp_dir, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        h = new_hasher()
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                h.update(chunk)
                f.write(chunk)
            f.flush()
            os.fchmod(f.fileno(), mode)  # exactly `mode`, whatever the umask
            if durable:
                os.fsync(f.fileno())
        return tmp, h.hexdigest()
    except BaseException:
        discard(tmp)
        raise


def publish(chunks: Iterable[bytes], dest: Path, tmp_dir: Path, mode: int = READ_ONLY,
            expect: str | None = None, durable: bool = True) -> str:
    """Write `chunks` to `dest` atomically and return their digest.

    With `expect`, raise Mismatch and leave `dest` untouched if the content does
    not hash to it: a verified copy in a single pass over the data.
    """
    tmp, digest = write_temp(chunks, tmp_dir, mode, durable)
    try:
        if expect is not None and digest != expect:
            raise Mismatch(digest)
        try:
            os.replace(tmp, dest)
        except FileNotFoundError:           # the destination's folder is not there yet
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.replace(tmp, dest)
    except BaseException:
        discard(tmp)
        raise
    return digest


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def publish_bytes(data: bytes, dest, mode: int = READ_ONLY, tmp_dir=None) -> None:
    """Write `data` to `dest` atomically (a temp file in `tmp_dir`, default next to
    `dest`, then a rename), with exactly `mode`; not made durable (the store syncs
    once per build; a materialised copy can always be made again). The few system
    calls of `publish` without its buffering and hashing, for data already in
    memory whose digest is known."""
    dest = os.fspath(dest)
    parent = os.path.dirname(dest)
    tmp = _temp_name(parent if tmp_dir is None else tmp_dir)
    try:
        fd = os.open(tmp, _NEW, 0o600)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(tmp), exist_ok=True)
        fd = os.open(tmp, _NEW, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)           # exactly `mode`, whatever the umask
        finally:
            os.close(fd)
        try:
            os.replace(tmp, dest)
        except FileNotFoundError:         # the destination's folder is not there yet
            os.makedirs(parent, exist_ok=True)
            os.replace(tmp, dest)
    except BaseException:
        discard(tmp)
        raise


def link_into(src: str, dest, src_stat: os.stat_result) -> bool:
    """Make `dest` a hard link to `src` (the file `src_stat` describes), replacing
    what is there atomically; False where the file system refuses the link (the
    caller copies instead). One system call for a new file, where writing a copy
    costs an inode and its data: a tenth of the time on ext4."""
    dest = os.fspath(dest)
    try:
        try:
            os.link(src, dest)
            return True
        except FileNotFoundError:
            parent = os.path.dirname(dest)
            if os.path.isdir(parent):
                return False                  # the object went away (gc): copy
            os.makedirs(parent, exist_ok=True)
            os.link(src, dest)
            return True
        except FileExistsError:
            try:
                st = os.stat(dest)
                if (st.st_ino, st.st_dev) == (src_stat.st_ino, src_stat.st_dev):
                    return True               # rename(2) of two links to one file is a no-op
            except FileNotFoundError:
                pass
            tmp = _temp_name(os.path.dirname(dest))
            os.link(src, tmp)
            try:
                os.replace(tmp, dest)
            except BaseException:
                discard(tmp)
                raise
            return True
    except OSError as e:
        if e.errno in _NO_LINK:
            return False
        raise


def file_holds(path, digest: str, executable: bool = False) -> bool:
    """The file at `path` holds exactly the object `digest`, with the x bit as asked:
    a target already in place need not be written again."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if executable != bool(os.fstat(fd).st_mode & 0o100):
            return False
        h = new_hasher()
        while chunk := os.read(fd, CHUNK):
            h.update(chunk)
        return h.hexdigest() == digest
    except OSError:
        return False
    finally:
        os.close(fd)


def discard(path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def read_chunks(f, size: int = CHUNK):
    while chunk := f.read(size):
        yield chunk
