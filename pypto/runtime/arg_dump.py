"""The argument dump (RunConfig(enable_dump_args=level)): the tensors a launch's tasks read,
as they were when each task was dispatched, and those they write, as they were when it
completed. Level 1 keeps the arguments the program tagged (pl.dump_tag, pl.submit(dumps=
[...])), level 2 every task's. Written after the launch into <dfx dir>/args_dump/: a
manifest, args_dump.json ({"args": [...], "bin_file": ...}), and the bytes, packed
row-major."""
from __future__ import annotations

import ctypes
import json
from pathlib import Path

from pypto import dtype as _dt

from . import abi

DIR = "args_dump"
MANIFEST = "args_dump.json"
BIN = "args_dump.bin"

# direction -> role; which stage captures it: before_dispatch what the task reads,
# after_completion what it writes (an inout argument both)
_ROLE = {abi.DIR_INPUT: "input", abi.DIR_OUTPUT: "output", abi.DIR_INOUT: "inout",
         abi.DIR_OUTPUT_EXISTING: "output", abi.DIR_NO_DEP: "input"}
_STAGES = {"before_dispatch": ("input", "inout"), "after_completion": ("output", "inout")}
_NAMES = {"FP32": "float32", "FP16": "float16", "BF16": "bfloat16", "BOOL": "bool"}


def dtype_name(code: int) -> str:
    d = _dt.BY_CODE[code]
    return _NAMES.get(d.name, d.name.lower())


def window_bytes(addr: int, start: int, shape, strides, nbytes: int) -> tuple[bytes, bool]:
    """The elements of a strided window, row-major, and whether it was one contiguous run."""
    import numpy as np
    shape, strides = tuple(shape), tuple(strides)
    if any(n == 0 for n in shape):
        return b"", True
    # the bytes from the window's first element to its last, seen as elements of nbytes
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    raw = np.frombuffer((ctypes.c_char * (span * nbytes)).from_address(addr + start * nbytes), np.uint8)
    view = np.lib.stride_tricks.as_strided(raw.reshape(span, nbytes), shape + (nbytes,),
                                           tuple(s * nbytes for s in strides) + (1,))
    return view.tobytes(), view.flags.c_contiguous


def capture(launch, task, stage: str) -> None:
    """Keep the arguments of `task` this stage dumps (device.cond held)."""
    roles = _STAGES[stage]
    for i, t in enumerate(task.spec.tensors):
        role = _ROLE.get(t.direction, "input")
        if role not in roles or not launch.addrs[t.buffer]:
            continue
        nbytes = _dt.BY_CODE[t.dtype].nbytes
        data, contiguous = window_bytes(launch.addrs[t.buffer], t.start_offset, t.shape, t.strides, nbytes)
        launch.record.arg_dumps.append({
            "task_id": str(task.spec.index), "kernel": task.kernel.name, "role": role, "stage": stage,
            "arg_index": i, "dtype": dtype_name(t.dtype), "shape": list(t.shape),
            "strides": list(t.strides), "start_offset": int(t.start_offset),
            "is_contiguous": contiguous, "tagged": bool(getattr(t, "dump", False)), "data": data})


def write(record, out_dir: Path, level: int) -> dict:
    """args_dump/args_dump.json and .bin for the launch's captured arguments."""
    entries = record.arg_dumps or []
    if level < 2:                                   # partial: only what the program tagged
        entries = [e for e in entries if e["tagged"]]
    d = Path(out_dir) / DIR
    d.mkdir(parents=True, exist_ok=True)
    manifest, offset = [], 0
    with open(d / BIN, "wb") as f:
        for e in entries:
            f.write(e["data"])
            manifest.append({k: v for k, v in e.items() if k != "data"}
                            | {"bin_offset": offset, "bin_size": len(e["data"])})
            offset += len(e["data"])
    (d / MANIFEST).write_text(json.dumps({"args": manifest, "bin_file": BIN}, indent=1) + "\n")
    return {MANIFEST: d / MANIFEST, BIN: d / BIN}
