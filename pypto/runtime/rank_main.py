"""One rank of a distributed run (started by pypto.runtime.ranks.RankPool): serves the
jobs that arrive as JSON lines on stdin until stdin closes, each on this process's own
simulated chip, and answers each on the reply pipe (its fd is argv[1]): {"ok": true},
or {"error": ...} after printing the traceback to stderr."""
from __future__ import annotations

import json
import os
import sys


def _attach(name: str):
    from multiprocessing import resource_tracker, shared_memory
    shm = shared_memory.SharedMemory(name=name)
    # the parent owns the segment: this process must not unlink it when it exits
    resource_tracker.unregister(shm._name, "shared_memory")
    return shm


class Rank:
    def __init__(self):
        self.worker = None
        self.programs = {}              # output dir -> CompiledProgram (loaded once)

    def run(self, job: dict) -> list:
        """The job's launches, run in order; per launch its host span (perf_counter_ns:
        CLOCK_MONOTONIC, comparable across the ranks' processes), its time on the device
        (the launch from start to end) and its effective window (orchestration and
        kernels, from the first to start to the last to end)."""
        import time
        import ctypes
        import numpy as np
        from pypto.runtime import comm, dtypes
        from pypto.runtime.compiled import CompiledProgram
        from pypto.runtime.config import RunConfig
        from pypto.runtime.worker import ChipWorker
        if self.worker is None:
            self.worker = ChipWorker(config=RunConfig(platform=job["platform"], device_id=job["device"]))
        segments = {}
        timings = []

        def seg(name):
            if name not in segments:
                segments[name] = _attach(name)
            return segments[name]
        try:
            if job.get("windows"):      # every rank's window, mapped here: this rank's comm context
                base = ctypes.addressof(ctypes.c_char.from_buffer(seg(job["windows"]).buf))
                comm.set_context(comm.CommContext(job["rank"], job["world_size"], base, job["window_bytes"],
                                                  float(os.environ.get("PYPTO_COMM_WAIT_S", "60"))))
            for launch in job["launches"]:
                compiled = self.programs.get(launch["dir"])
                if compiled is None:
                    compiled = self.programs[launch["dir"]] = CompiledProgram(launch["dir"])
                args = []
                for spec, p in zip(launch["args"], compiled.params):
                    if "scalar" in spec:
                        args.append(spec["scalar"])
                    else:
                        args.append(np.ndarray(spec["shape"], dtype=dtypes.numpy_dtype(p.dtype),
                                               buffer=seg(spec["shm"]).buf, offset=spec["offset"]))
                start = time.perf_counter_ns()
                _, rec = self.worker.run_with_record(compiled, *args)
                end = time.perf_counter_ns()
                del args
                timings.append({"host": [start, end], "device_ns": rec.end_ns - rec.start_ns,
                                "effective_ns": _effective(rec)})
        finally:
            comm.set_context(None)
            for shm in segments.values():
                shm.close()
        return timings


def _effective(rec) -> int:
    spans = [(t.start_ns, t.end_ns) for t in rec.tasks if t.end_ns]
    if rec.orchestration_start_ns:
        spans.append((rec.orchestration_start_ns, rec.orchestration_end_ns))
    return max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0


def main() -> int:
    reply = os.fdopen(int(sys.argv[1]), "w")
    reply.write('{"ready": true}\n')        # (started: the pool's startup wait ends)
    reply.flush()
    rank = Rank()
    for line in sys.stdin:
        job = json.loads(line)
        try:
            reply.write(json.dumps({"ok": True, "launches": rank.run(job)}) + "\n")
        except BaseException as e:        # the parent reports it as this rank's error
            import traceback
            traceback.print_exc()
            reply.write(json.dumps({"error": f"{type(e).__name__}: {e}"}) + "\n")
        reply.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
