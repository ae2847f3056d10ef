"""One rank of a distributed run (started by pypto.runtime.ranks): reads its job (JSON on
stdin), maps the host tensors' shared memory and runs its launches, in order, on its own
simulated chip. Exits 0 when every launch ran; an error is printed and exits 1."""
from __future__ import annotations

import json
import sys


def _attach(name: str):
    from multiprocessing import resource_tracker, shared_memory
    shm = shared_memory.SharedMemory(name=name)
    # the parent owns the segment: this process must not unlink it when it exits
    resource_tracker.unregister(shm._name, "shared_memory")
    return shm


def run(job: dict) -> None:
    import numpy as np
    from pypto.runtime import dtypes
    from pypto.runtime.compiled import CompiledProgram
    from pypto.runtime.config import RunConfig
    from pypto.runtime.worker import ChipWorker
    import ctypes
    import os
    from pypto.runtime import comm
    segments = {}
    if job.get("windows"):          # every rank's window, mapped here: this rank's comm context
        shm = segments[job["windows"]] = _attach(job["windows"])
        base = ctypes.addressof(ctypes.c_char.from_buffer(shm.buf))
        comm.set_context(comm.CommContext(job["rank"], job["world_size"], base, job["window_bytes"],
                                          float(os.environ.get("PYPTO_COMM_WAIT_S", "60"))))
    config = RunConfig(platform=job["platform"], device_id=job["device"])
    with ChipWorker(config=config):
        for launch in job["launches"]:
            compiled = CompiledProgram(launch["dir"])
            args = []
            for spec, p in zip(launch["args"], compiled.params):
                if "scalar" in spec:
                    args.append(spec["scalar"])
                    continue
                shm = segments.get(spec["shm"]) or segments.setdefault(spec["shm"], _attach(spec["shm"]))
                npd = dtypes.numpy_dtype(p.dtype)
                args.append(np.ndarray(spec["shape"], dtype=npd, buffer=shm.buf, offset=spec["offset"]))
            compiled(*args)
            del args
    for shm in segments.values():
        shm.close()


def main() -> int:
    job = json.loads(sys.stdin.read())
    try:
        run(job)
    except BaseException as e:        # the parent reports it as this rank's error
        import traceback
        traceback.print_exc()
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
