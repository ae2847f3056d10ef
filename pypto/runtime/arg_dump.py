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
    shape, strides = list(shape), list(strides)
    contiguous, expect = True, 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != expect:
            contiguous = False
        expect *= n
    count = 1
    for n in shape:
        count *= n
    if contiguous or count == 0:
        return ctypes.string_at(addr + start * nbytes, count * nbytes), True
    out, last = [], len(shape) - 1

    def walk(dim, offset):
        if dim == last:
            row = shape[last]
            if strides[last] == 1:
                out.append(ctypes.string_at(addr + offset * nbytes, row * nbytes))
            else:
                out.extend(ctypes.string_at(addr + (offset + j * strides[last]) * nbytes, nbytes)
                           for j in range(row))
            return
        for i in range(shape[dim]):
            walk(dim + 1, offset + i * strides[dim])

    walk(0, start)
    return b"".join(out), False


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
