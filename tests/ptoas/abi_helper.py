"""ctypes side of pypto_abi.h for tests: PyptoTensor descriptors over numpy arrays and a
loader that calls a kernel .so's pypto_kernel_entry."""
from __future__ import annotations

import ctypes
import json
import struct
import uuid
from pathlib import Path

import numpy as np

MAX_DIMS = 5
DTYPE_CODES = {np.dtype(np.float32): 0, np.dtype(np.float16): 1, np.dtype(np.int8): 3,
               np.dtype(np.int16): 4, np.dtype(np.int32): 5, np.dtype(np.int64): 6,
               np.dtype(np.uint8): 7}
BF16 = 2  # numpy has no bfloat16: pass uint16 arrays with dtype_code=BF16


class PyptoTensor(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p), ("start_offset", ctypes.c_int64),
                ("ndims", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_DIMS), ("strides", ctypes.c_int64 * MAX_DIMS)]


def describe(a: np.ndarray, dtype_code: int | None = None) -> PyptoTensor:
    t = PyptoTensor()
    t.addr = a.ctypes.data
    t.start_offset = 0
    t.ndims = a.ndim
    t.dtype = DTYPE_CODES[a.dtype] if dtype_code is None else dtype_code
    for i in range(a.ndim):
        t.shape[i] = a.shape[i]
        t.strides[i] = a.strides[i] // a.itemsize
    return t


def scalar_bits(value, kind: str) -> int:
    if kind == "f32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if kind in ("i32", "i64", "index"):
        return int(value) & 0xFFFFFFFFFFFFFFFF
    raise ValueError(kind)


class Kernel:
    def __init__(self, so_bytes: bytes, tmp_dir: Path):
        path = Path(tmp_dir) / f"kernel_{uuid.uuid4().hex}.so"  # unique: dlopen caches by path
        path.write_bytes(so_bytes)
        self.lib = ctypes.CDLL(str(path))
        self.lib.pypto_kernel_entry.argtypes = [ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_int32]
        self.lib.pypto_kernel_entry.restype = ctypes.c_int
        self.lib.pypto_kernel_info.restype = ctypes.c_char_p

    def info(self) -> dict:
        return json.loads(self.lib.pypto_kernel_info().decode())

    def __call__(self, *tensors, scalars=()) -> str | None:
        """tensors: numpy arrays or (array, dtype_code); scalars: ints (bit patterns).
        Returns None on success, else the kernel's error message."""
        descs = [describe(*t) if isinstance(t, tuple) else describe(t) for t in tensors]
        args = (ctypes.c_int64 * (len(descs) + len(scalars) + 1))()
        for i, d in enumerate(descs):
            args[i] = ctypes.addressof(d)
        for j, s in enumerate(scalars):
            args[len(descs) + j] = ctypes.c_int64(s).value
        err = ctypes.create_string_buffer(1024)
        rc = self.lib.pypto_kernel_entry(args, err, len(err))
        return None if rc == 0 else err.value.decode()
