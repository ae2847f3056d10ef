"""Running a DistributedCompiledProgram: every rank in its own OS process with its own
simulated chip (`python -m pypto.runtime.rank_main`), all started together so ranks run
concurrently.

The host tensors live in shared memory for the run (copied in, and the Out / InOut ones
copied back when every rank finished): a rank's launch arguments are windows of them,
so a rank writes its slice of the output in place. A rank that fails (an error, a crash,
a kill) fails the run at once with its error; the other ranks are killed and the shared
memory is unlinked whatever happens.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path


class RankError(RuntimeError):
    """A rank of a distributed run failed; the message is that rank's error."""

    def __init__(self, rank: int, device: int, detail: str):
        super().__init__(f"rank {rank} (device {device}) failed:\n{detail}")
        self.rank, self.device = rank, device


def _address(buf) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def _host_arrays(prog, args) -> list:
    """(address, nbytes) of each host tensor argument, checked against the parameters."""
    from .tensors import host_view
    from . import dtypes
    params = prog.params
    if len(args) != len(params):
        raise TypeError(f"{prog.plan['name']} takes {len(params)} arguments "
                        f"({', '.join(p['name'] for p in params)}), got {len(args)}")
    out = []
    for a, p in zip(args, params):
        want = dtypes.to_dtype(p["dtype"])
        v = host_view(a, f"parameter '{p['name']}'", writable=p["direction"] != "In", expect=want)
        if list(v.shape) != p["shape"]:
            raise TypeError(f"parameter '{p['name']}' expects shape {p['shape']}, got {list(v.shape)}")
        out.append((v.addr, v.nbytes))
    return out


def _jobs(prog, platform: str, names: list, windows: str | None) -> dict:
    out_dir = prog.output_dir.resolve()
    jobs: dict[int, dict] = {}
    world = prog.distributed_config.world_size
    wbytes = prog.plan.get("window_bytes", 0)
    for r in range(world):
        jobs[r] = {"rank": r, "device": prog.distributed_config.device_ids[r], "world_size": world,
                   "platform": platform, "windows": windows, "window_bytes": wbytes, "launches": []}

    def arg(a, rank):
        if "scalar" in a:
            return a
        if "window" in a:          # this rank's copy of the buffer
            slot = prog.plan["windows"][a["window"]]
            return {"shm": windows, "offset": rank * wbytes + slot["offset"], "shape": a["shape"]}
        return {"shm": names[a["param"]], "offset": a["offset"], "shape": a["shape"]}
    for ln in prog.plan["launches"]:
        args = [arg(a, ln["rank"]) for a in ln["args"]]
        jobs[ln["rank"]]["launches"].append(
            {"dir": str(out_dir / prog.plan["programs"][ln["program"]]["dir"]), "args": args})
    return jobs


_SEGMENTS = itertools.count()


def segment_prefix() -> str:
    """What the names of this process's segments start with (/dev/shm/<prefix>...)."""
    return f"pypto_{os.getpid()}_"


def _segment(nbytes: int):
    from multiprocessing import shared_memory
    name = f"{segment_prefix()}{next(_SEGMENTS)}_{secrets.token_hex(4)}"
    return shared_memory.SharedMemory(name=name, create=True, size=nbytes)


def jobs_ranks(prog) -> range:
    return range(prog.distributed_config.world_size)


def _env() -> dict:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])       # where the pypto package is
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_ranks(prog, args, platform: str, poll_s: float = 0.002) -> None:
    views = _host_arrays(prog, args)
    segments, procs, logs = [], {}, {}
    try:
        for addr, nbytes in views:
            shm = _segment(max(nbytes, 1))
            segments.append(shm)
            ctypes.memmove(_address(shm.buf), addr, nbytes)
        names = [s.name for s in segments]
        windows = None
        if prog.plan.get("windows"):        # every rank's window, zeroed, side by side
            shm = _segment(prog.plan["window_bytes"] * len(jobs_ranks(prog)))
            segments.append(shm)
            windows = shm.name
        jobs = _jobs(prog, platform, names, windows)
        env = _env()
        for r, job in jobs.items():
            logs[r] = tempfile.TemporaryFile()
            p = subprocess.Popen([sys.executable, "-m", "pypto.runtime.rank_main"], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=logs[r], env=env)
            procs[r] = p
            p.stdin.write(json.dumps(job).encode())
            p.stdin.close()
        running = dict(procs)
        while running:
            for r, p in list(running.items()):
                rc = p.poll()
                if rc is None:
                    continue
                del running[r]
                if rc != 0:
                    logs[r].seek(0)
                    detail = logs[r].read().decode(errors="replace").strip()
                    why = detail.splitlines()[-20:] if detail else [f"exited with status {rc}" +
                                                                   (" (killed by a signal)" if rc < 0 else "")]
                    raise RankError(r, jobs[r]["device"], "\n".join(why))
            if running:
                time.sleep(poll_s)
        for (addr, nbytes), shm, p in zip(views, segments, prog.params):   # (the windows come last)
            if p["direction"] != "In":
                ctypes.memmove(addr, _address(shm.buf), nbytes)
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for f in logs.values():
            f.close()
        for shm in segments:
            shm.close()
            shm.unlink()
