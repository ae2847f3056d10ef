"""The blocks of a fast-path launch on lanes run in C (lanes.cpp): threads that wait for the
next launch spinning, then sleeping, so a launch hands its blocks over in a microsecond
instead of waking Python threads. Built once per machine with the system compiler, beside
the tile library's PCH (pch.built_once); when it cannot be built or loaded, or another
launch holds it, the caller runs its lanes on Python threads as before."""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from pathlib import Path

from . import abi

SOURCE = Path(__file__).with_name("lanes.cpp")
_lib = None
_loaded = False
_lock = threading.Lock()


def _load():
    global _lib, _loaded
    with _lock:
        if _loaded:
            return _lib
        _loaded = True
        try:
            import xxhash
            from pypto import pch
            from pypto.cxx import _resolve
            from pypto.toolchain import compiler_id
            cxx = _resolve(None)
            text = SOURCE.read_bytes()
            key = "lanes-" + xxhash.xxh3_128_hexdigest(compiler_id(os.path.realpath(cxx)).encode() + b"\0" + text)
            so = pch.built_once(key, "lanes.so", lambda tmp: [
                cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", str(SOURCE), "-o", str(tmp / "lanes.so")])
            if so is None:
                return None
            lib = ctypes.CDLL(str(so))
            fn = lib.pypto_lanes_run
            fn.argtypes = [ctypes.c_void_p]
            fn.restype = ctypes.c_int
            _lib = fn
        except Exception:       # no compiler, no cache directory: the Python lanes do it
            _lib = None
        return _lib


class _Launch(ctypes.Structure):
    """lanes.cpp's PyptoLanes: what a launch reads, and its summary."""
    _fields_ = [("entry", ctypes.c_void_p), ("args", ctypes.c_void_p), ("times", ctypes.c_void_p),
                ("status", ctypes.c_void_p), ("errs", ctypes.c_void_p), ("blocks", ctypes.c_int32),
                ("lanes", ctypes.c_int32), ("errlen", ctypes.c_int32), ("failed", ctypes.c_int32),
                ("first", ctypes.c_int64), ("last", ctypes.c_int64), ("lane_of", ctypes.c_void_p)]


class Lanes:
    """What one plan's launches pass to pypto_lanes_run, made once."""
    __slots__ = ("blocks", "args", "times", "status", "lane_of", "errs", "launch", "address", "unpack")

    def __init__(self, entry, per_block: list, lanes: int):
        self.blocks = len(per_block)
        self.args = (ctypes.c_void_p * self.blocks)(*(ctypes.addressof(a) for a in per_block))
        self.times = (ctypes.c_int64 * (2 * self.blocks))()
        self.status = (ctypes.c_int32 * self.blocks)()
        self.lane_of = (ctypes.c_int32 * self.blocks)()
        self.errs = ctypes.create_string_buffer(abi.ERR_LEN * lanes)
        self.launch = _Launch(ctypes.cast(entry, ctypes.c_void_p), ctypes.addressof(self.args),
                              ctypes.addressof(self.times), ctypes.addressof(self.status),
                              ctypes.addressof(self.errs), self.blocks, lanes, abi.ERR_LEN,
                              lane_of=ctypes.addressof(self.lane_of))
        self.address = ctypes.addressof(self.launch)
        self.unpack = struct.Struct(f"{2 * self.blocks}q").unpack_from

    def block_times(self) -> tuple:
        """(start, end) per block of the last launch; (0, 0): not run."""
        flat = iter(self.unpack(self.times))
        return tuple(zip(flat, flat))

    def failures(self) -> list:
        """[(end, block, status, message)] of the last launch (a lane keeps its one failure)."""
        out = []
        for b in range(self.blocks):
            if self.status[b]:
                lane = self.lane_of[b]
                raw = self.errs.raw[lane * abi.ERR_LEN:(lane + 1) * abi.ERR_LEN].split(b"\0", 1)[0]
                out.append((self.times[2 * b + 1], b, self.status[b], raw.decode("utf-8", "replace")))
        return out


def available() -> bool:
    """The C lanes are built and loaded (on this machine's first use, once)."""
    return _load() is not None


def make(entry, per_block: list, lanes: int) -> Lanes | None:
    return Lanes(entry, per_block, lanes) if available() else None


def run_blocks(lanes: Lanes):
    """(per-block (start, end) times, failures [(end, block, status, message)]) of one
    launch, or None when the C lanes are taken (the caller runs the Python lanes);
    lanes.launch then holds its first start and last end."""
    if _lib(lanes.address) < 1:
        return None
    return lanes.block_times(), (lanes.failures() if lanes.launch.failed else [])
