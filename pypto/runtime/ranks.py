"""Running a DistributedCompiledProgram: every rank in its own OS process with its own
simulated chip (`python -m pypto.runtime.rank_main`), all started together so ranks run
concurrently. A RankPool keeps them for several dispatches (a DistributedWorker); a
one-shot call starts a pool, dispatches once and closes it.

For a dispatch, the host tensors are copied into shared memory (and the Out / InOut ones
copied back once every rank finished); a rank's launch arguments are windows of them, so
a rank writes its slice of an output in place. A resident tensor (DistributedWorker.
alloc_tensor) is shared memory of its own, passed without a copy. The window buffers are
a fresh zeroed segment per dispatch. A rank that fails (an error, a crash, a kill) fails
the dispatch at once with its error and the pool is closed: the other ranks are killed
and every segment is unlinked.
"""
from __future__ import annotations

import ctypes
import itertools
import json
import os
import secrets
import select
import subprocess
import sys
import tempfile
from pathlib import Path


class RankError(RuntimeError):
    """A rank of a distributed run failed; the message is that rank's error."""

    def __init__(self, rank: int, device: int, detail: str):
        super().__init__(f"rank {rank} (device {device}) failed:\n{detail}")
        self.rank, self.device = rank, device


def address(buf) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


_SEGMENTS = itertools.count()


def segment_prefix() -> str:
    """What the names of this process's segments start with (/dev/shm/<prefix>...)."""
    return f"pypto_{os.getpid()}_"


def segment(nbytes: int):
    from multiprocessing import shared_memory
    name = f"{segment_prefix()}{next(_SEGMENTS)}_{secrets.token_hex(4)}"
    return shared_memory.SharedMemory(name=name, create=True, size=max(nbytes, 1))


def release(shm) -> None:
    shm.close()
    shm.unlink()


def _env() -> dict:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])       # where the pypto package is
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


class RankPool:
    """One process per rank, each serving dispatches (JSON lines on its stdin; a reply
    line on a pipe of its own) until the pool closes."""

    def __init__(self, platform: str, device_ids: list, startup_timeout_s: float = 60.0):
        self.platform, self.device_ids = platform, list(device_ids)
        self.procs, self.logs, self.replies = [], [], []
        self.closed = False
        env = _env()
        try:
            for _ in self.device_ids:
                rfd, wfd = os.pipe()
                log = tempfile.TemporaryFile()
                p = subprocess.Popen([sys.executable, "-m", "pypto.runtime.rank_main", str(wfd)],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log, env=env,
                                     pass_fds=(wfd,))
                os.close(wfd)
                self.procs.append(p)
                self.logs.append(log)
                # unbuffered: select() sees every reply line (none waits in a Python buffer)
                self.replies.append(os.fdopen(rfd, "rb", buffering=0))
            self._await(set(range(len(self.device_ids))), startup_timeout_s, "start")
        except BaseException:
            self.close(kill=True)
            raise

    @property
    def world_size(self) -> int:
        return len(self.device_ids)

    def run(self, jobs: dict, poll_s: float = 0.05) -> dict:
        """Send each rank its job and wait until all answered; a failing rank fails it.
        Returns each rank's launch timings (rank_main.Rank.run)."""
        if self.closed:
            raise RuntimeError("the distributed worker is closed")
        for r, job in jobs.items():
            job = dict(job, rank=r, device=self.device_ids[r], world_size=self.world_size,
                       platform=self.platform)
            try:
                self.procs[r].stdin.write((json.dumps(job) + "\n").encode())
                self.procs[r].stdin.flush()
            except OSError:
                self._fail(r)
        return self._await(set(jobs), None, "run", poll_s)

    def _await(self, pending: set, timeout_s, what: str, poll_s: float = 0.05) -> dict:
        import time
        until = None if timeout_s is None else time.monotonic() + timeout_s
        replies = {}
        while pending:
            ready, _, _ = select.select([self.replies[r] for r in pending], [], [], poll_s)
            for f in ready:
                r = self.replies.index(f)
                line = f.readline()
                if not line:
                    self._fail(r)
                reply = json.loads(line)
                if "error" in reply:
                    self._fail(r, reply["error"])
                replies[r] = reply.get("launches", [])
                pending.discard(r)
            for r in list(pending):
                if self.procs[r].poll() is not None:
                    self._fail(r)
            if until is not None and pending and time.monotonic() > until:
                r = min(pending)
                self._fail(r, f"did not {what} within {timeout_s} s")
        return replies

    def _fail(self, r: int, error: str | None = None):
        self.logs[r].seek(0)
        log = self.logs[r].read().decode(errors="replace").strip()
        self.close(kill=True)
        rc = self.procs[r].returncode
        if error is None:
            error = "\n".join(log.splitlines()[-20:]) if log else \
                f"exited with status {rc}" + (" (killed by a signal)" if rc is not None and rc < 0 else "")
            if rc is not None and rc < 0 and "killed by a signal" not in error:
                error += f"\n(the process was killed by a signal, status {rc})"
        raise RankError(r, self.device_ids[r], error)

    def close(self, kill: bool = False) -> None:
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            if kill and p.poll() is None:
                p.kill()
            try:
                p.stdin.close()               # (a serving rank exits at the end of its input)
            except OSError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for f in self.replies + self.logs:
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close(kill=exc[0] is not None)


def _bind(prog, args, resident) -> tuple[list, list, list]:
    """Per parameter: its segment and its copy-back (address, nbytes) or None; the
    segments made for this dispatch (a resident tensor's is its own)."""
    from . import dtypes
    from .tensors import host_view
    params = prog.params
    if len(args) != len(params):
        raise TypeError(f"{prog.plan['name']} takes {len(params)} arguments "
                        f"({', '.join(p['name'] for p in params)}), got {len(args)}")
    segs, back, made = [], [], []
    try:
        for a, p in zip(args, params):
            if resident is not None and resident(a):
                if list(a.shape) != p["shape"] or a.dtype.name != p["dtype"]:
                    raise TypeError(f"parameter '{p['name']}' expects {p['dtype']} {p['shape']}, got the "
                                    f"resident tensor {a.dtype.name} {list(a.shape)}")
                segs.append(a._shm)
                back.append(None)
                continue
            v = host_view(a, f"parameter '{p['name']}'", writable=p["direction"] != "In",
                          expect=dtypes.to_dtype(p["dtype"]))
            if list(v.shape) != p["shape"]:
                raise TypeError(f"parameter '{p['name']}' expects shape {p['shape']}, got {list(v.shape)}")
            shm = segment(v.nbytes)
            made.append(shm)
            ctypes.memmove(address(shm.buf), v.addr, v.nbytes)
            segs.append(shm)
            back.append((v.addr, v.nbytes) if p["direction"] != "In" else None)
    except BaseException:
        for shm in made:
            release(shm)
        raise
    return segs, back, made


def _jobs(prog, segs: list, windows: str | None, which: range) -> dict:
    out_dir = prog.output_dir.resolve()
    wbytes = prog.plan.get("window_bytes", 0)
    jobs: dict[int, dict] = {}

    def arg(a, rank):
        if "scalar" in a:
            return a
        if "window" in a:          # this rank's copy of the buffer
            slot = prog.plan["windows"][a["window"]]
            return {"shm": windows, "offset": rank * wbytes + slot["offset"], "shape": a["shape"]}
        return {"shm": segs[a["param"]].name, "offset": a["offset"], "shape": a["shape"]}
    for ln in (prog.plan["launches"][i] for i in which):
        job = jobs.setdefault(ln["rank"], {"windows": windows, "window_bytes": wbytes, "launches": []})
        job["launches"].append({"dir": str(out_dir / prog.plan["programs"][ln["program"]]["dir"]),
                                "args": [arg(a, ln["rank"]) for a in ln["args"]]})
    return jobs


def dispatch(pool: RankPool, prog, args, resident=None, windows=None, callbacks=None) -> dict:
    """One run of `prog` on the pool's ranks (blocks until every rank finished). `windows`:
    a segment kept across dispatches (a persistent worker's); else a fresh zeroed one.
    A SubWorker call runs here, on the host, once the launches before it are done, given
    the tensors as they are then (`callbacks`: name -> the function). Returns each rank's
    launch timings, in order: {rank: [{"host": [start, end], "device_ns", "effective_ns"}]}."""
    segs, back, made = _bind(prog, args, resident)
    try:
        if windows is not None:
            windows = windows.name
        elif prog.plan.get("windows"):      # every rank's window, zeroed, side by side
            shm = segment(prog.plan["window_bytes"] * pool.world_size)
            made.append(shm)
            windows = shm.name
        launches = prog.plan["launches"]
        calls = prog.plan.get("sub_worker_calls") or []
        start, timings = 0, {}
        for at in sorted({c["after"] for c in calls}) + [None]:
            end = len(launches) if at is None else at
            if end > start:
                for r, got in pool.run(_jobs(prog, segs, windows, range(start, end))).items():
                    timings.setdefault(r, []).extend(got)
                start = end
            if at is not None:
                _sub_workers([c for c in calls if c["after"] == at], callbacks or {}, prog, segs)
        for shm, b in zip(segs, back):
            if b is not None:
                ctypes.memmove(b[0], address(shm.buf), b[1])
        return timings
    finally:
        for shm in made:
            release(shm)


def _sub_workers(calls: list, callbacks: dict, prog, segs) -> None:
    """The SubWorker calls at one point of the plan, on the host's sub-workers: as many
    threads as DistributedConfig.num_sub_workers (at least one per SubWorker the program
    declares). A call starts once the earlier calls whose tensors overlap its own are done
    (they may write them); the others run beside it. The first failure is raised."""
    from concurrent.futures import ThreadPoolExecutor
    declared = len(prog.plan.get("sub_workers") or [])
    n = max(int(prog.plan["distributed_config"].get("num_sub_workers", 0)), declared, 1)
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="pypto-subworker") as ex:
        running = []                          # (the bytes it touches, its future)
        for call in calls:
            mine = [(a.get("param"), a.get("offset", 0), a.get("nbytes", 0)) for a in call["args"]]
            for theirs, fut in running:
                if any(p == q and o < r + m and r < o + n_ for p, o, n_ in mine for q, r, m in theirs):
                    fut.result()
            running.append((mine, ex.submit(_sub_worker, call, callbacks.get(call["name"]), prog, segs)))
        for _, fut in running:
            fut.result()


def _sub_worker(call: dict, fn, prog, segs) -> None:
    """A SubWorker call: `fn` given the list of its tensors, torch views of the host tensors
    as they are now (valid during the call)."""
    import numpy as np
    import torch
    from . import dtypes
    if fn is None:
        raise ValueError(f"SubWorker {call['name']!r} is a runtime-bound callback (declared with a `...` body): "
                         f"bind it with prepare(callbacks={{{call['name']!r}: fn}})")
    tensors = []
    for a in call["args"]:
        if "param" not in a:
            raise TypeError(f"SubWorker {call['name']!r}: its arguments are host tensors, got {a}")
        d = dtypes.to_dtype(prog.params[a["param"]]["dtype"])
        raw = (ctypes.c_char * a["nbytes"]).from_address(address(segs[a["param"]].buf) + a["offset"])
        arr = np.ctypeslib.as_array(raw).view(dtypes.numpy_dtype(d)).reshape(a["shape"])
        tensors.append(torch.from_numpy(arr).view(dtypes.torch_dtype(d)))
    fn(tensors)


def run_ranks(prog, args, platform: str, callbacks=None) -> None:
    """A one-shot call: a pool for this run only."""
    with RankPool(platform, prog.distributed_config.device_ids) as pool:
        dispatch(pool, prog, args, callbacks=callbacks)
