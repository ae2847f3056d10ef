"""Run steps on a Dask `distributed` cluster ($PYPTO_EXECUTOR), the remote cache between.

    PYPTO_EXECUTOR                  tcp://host:port of a Dask scheduler (tls://... too)
    PYPTO_EXECUTOR_STAGES           the stages sent there (default: pass, pto, ptoas,
                                    kernel, extern, orchestration); the rest run here
    PYPTO_EXECUTOR_CONNECT_TIMEOUT  seconds to reach the scheduler (default 5)
    PYPTO_EXECUTOR_TASK_TIMEOUT     seconds a step may take there, queueing included
                                    (default 600)

A step is a pure function of objects named by digests, so it travels as names, never
as data: the client makes sure its input objects are in the remote cache (Redis),
submits `remote_build` with the step, its key and the input digests; the worker reads
the inputs from its own store (which asks Redis, checking every object), checks that
its code for the step's stage has the client's implementation digest, runs the stage,
and stores the outputs, which publishes them and then the action entry to Redis. The
client pulls the entry into its local store and goes on as if it had built the step.
Dask's pickles carry only the call (the stage function by reference, digests, options);
no result of a stage is ever pickled, and Redis holds raw bytes as always.

Failure. A worker with another pypto refuses the step (`WorkerMismatch`): the build
stops with that error rather than use something else's result. Anything else that goes
wrong out there (scheduler unreachable or gone, a task lost past Dask's own retries,
the timeout, outputs missing from Redis) prints one warning line and the step, and
every later one of this process, is built here. A stage that raises on a worker is
built here again, so its own exception and traceback surface as in a local build.

Layering: knows nothing of pypto; `distributed` is imported when the first step is
submitted, and this module only when $PYPTO_EXECUTOR is set.
"""
from __future__ import annotations

import copy
import importlib.util
import os
import re
import sys
import threading
import time
import uuid

from pypto_cache.remote import _say   # one line on stderr, never raising

__all__ = ["ExecutorError", "WorkerMismatch", "Executor", "settings", "from_env",
           "remote_build", "worker_store", "on_worker", "DEFAULT_STAGES"]

DEFAULT_STAGES = ("pass", "pto", "ptoas", "kernel", "extern", "orchestration")
_ADDRESS = re.compile(r"(tcp|tls|ws|wss|inproc)://[^\s/]+(:\d+)?/?")


class ExecutorError(ValueError):
    """$PYPTO_EXECUTOR cannot be used as set (malformed, no `distributed`, no remote)."""


def __getattr__(name):
    # WorkerMismatch is the engine's (a StepFailed): run imports doit, so only on use
    if name == "WorkerMismatch":
        from pypto_pipeline.run import WorkerMismatch
        return WorkerMismatch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _seconds(env, name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise ExecutorError(f"{name}={raw!r} is not a number of seconds")
    return value


def settings(environ=None) -> dict | None:
    """The executor's configuration from the environment (None when PYPTO_EXECUTOR is
    unset); ExecutorError says what to fix when it cannot work as set."""
    env = os.environ if environ is None else environ
    address = env.get("PYPTO_EXECUTOR", "").strip()
    if not address:
        return None
    if not _ADDRESS.fullmatch(address):
        raise ExecutorError(f"PYPTO_EXECUTOR={address!r} is not a Dask scheduler address; "
                            f"use tcp://host:port (e.g. tcp://scheduler:8786), or unset it")
    stages = tuple(s.strip() for s in env.get("PYPTO_EXECUTOR_STAGES", "").split(",") if s.strip())
    if importlib.util.find_spec("distributed") is None:     # found, not imported (~1 s)
        raise ExecutorError(f"PYPTO_EXECUTOR={address!r} needs the Dask client: "
                            f"pip install 'pypto[dask]' (or unset PYPTO_EXECUTOR)") from None
    remote = env.get("PYPTO_REMOTE_CACHE", "").strip()
    mode = (env.get("PYPTO_REMOTE_CACHE_MODE") or "read-write").strip().lower()
    disabled = env.get("PYPTO_CACHE_DISABLE", "").strip().lower() in ("1", "true", "yes", "on")
    if not remote or mode != "read-write" or disabled:
        why = ("PYPTO_CACHE_DISABLE is set" if disabled else
               "PYPTO_REMOTE_CACHE is not set" if not remote else
               f"PYPTO_REMOTE_CACHE_MODE is {mode}")
        raise ExecutorError(
            f"PYPTO_EXECUTOR={address!r} needs a read-write remote cache shared with the "
            f"workers ({why}): they read the steps' inputs from it and publish the results "
            f"there; set PYPTO_REMOTE_CACHE=redis://host:port/db on this machine and on "
            f"every worker, or unset PYPTO_EXECUTOR")
    return {"address": address, "stages": stages or DEFAULT_STAGES,
            "connect_timeout": _seconds(env, "PYPTO_EXECUTOR_CONNECT_TIMEOUT", 5.0),
            "task_timeout": _seconds(env, "PYPTO_EXECUTOR_TASK_TIMEOUT", 600.0)}


# -- the client side ------------------------------------------------------------------

class Executor:
    """Sends steps to one scheduler. `impl_check(step)` names how a worker recomputes
    the step's implementation digest: (a module-level function, its args), or None to keep the
    step here. One per process and address (`from_env`): one Client, one warning."""

    def __init__(self, address: str, impl_check, stages=DEFAULT_STAGES,
                 connect_timeout: float = 5.0, task_timeout: float = 600.0):
        self.address = address
        self.impl_check = impl_check
        self.stages = frozenset(stages)
        self.connect_timeout = connect_timeout
        self.task_timeout = task_timeout
        self.disabled = False
        self._client = None
        self._mu = threading.Lock()
        self._off = threading.Lock()      # one warning, whichever thread fails first
        self.slots = 0               # the cluster's threads, once connected

    def __repr__(self) -> str:
        return f"Executor({self.address!r})"

    def wants(self, step) -> bool:
        return not self.disabled and step.stage in self.stages

    def client(self):
        """The process's Client, connected on first use (None once the cluster failed)."""
        if self._client is None and not self.disabled:
            with self._mu:
                if self._client is None and not self.disabled:
                    try:
                        from distributed import Client
                        client = Client(self.address, timeout=self.connect_timeout,
                                        set_as_default=False)
                        threads = client.nthreads()      # {worker: its threads}, all of them
                        if not threads:
                            client.close()
                            raise OSError("the scheduler has no workers")
                        self.slots = sum(threads.values())
                        self._client = client
                    except Exception as exc:      # unreachable, refused, no workers
                        self._give_up("connecting", exc)
        return self._client

    def _give_up(self, doing: str, exc: BaseException) -> None:
        with self._off:
            first = not self.disabled
            self.disabled = True
        if first:
            text = " ".join(str(exc).split())[:160]
            _say(f"pypto: warning: executor {self.address}: {doing} failed "
                 f"({type(exc).__name__}{': ' + text if text else ''}); building locally, "
                 f"and not asking it again in this process")

    def build(self, step, key: str, digests: dict[str, str], store):
        """Build `step` on the cluster: (outputs, worker address) with the outputs in
        the local store, or None when it must be built here. Raises WorkerMismatch."""
        check = self.impl_check(step)
        if check is None or not self.wants(step):
            return None
        client = self.client()
        if client is None:
            return None
        if not store.publish_objects(set(digests.values())):
            self._give_up("publishing the inputs to the remote cache",
                          RuntimeError("no writable remote cache"))
            return None
        payload = copy.copy(step)
        payload.targets = {}         # the client's paths: nothing for a worker to write
        try:
            future = client.submit(remote_build, payload, key, digests, check, pure=False,
                                   key=f"pypto {step.name} {uuid.uuid4().hex}")
            try:
                answer = self._wait(client, future, time.monotonic() + self.task_timeout)
            finally:
                future.release()
        except Exception as exc:          # lost, timed out, disconnected, killed worker
            self._give_up(f"step {step.name}", exc)
            return None
        if "refused" in answer:
            from pypto_pipeline.run import WorkerMismatch
            raise WorkerMismatch(answer["refused"])
        if "outputs" not in answer:       # the stage raised there, or its inputs were gone
            return None
        manifest = store.get_action(key)  # from Redis into the local store, checked
        outputs = manifest and manifest.get("outputs", {})
        if not outputs or any(outputs.get(o) != answer["outputs"].get(o) for o in step.outputs):
            # evicted or refused on the way (the remote tier said why, if it failed):
            # this step is built here, the cluster keeps the next ones
            return None
        return {o: outputs[o] for o in step.outputs}, answer["worker"]

    POLL = 2.0           # seconds between looks at whether the cluster still has workers

    def _wait(self, client, future, deadline: float):
        """The future's result. Dask runs a task whose worker died again on another; with
        no worker left at all (workers without a nanny), or past the deadline (the task
        timeout), this gives up (TimeoutError) instead of waiting for workers that may
        never come."""
        idle = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no result within PYPTO_EXECUTOR_TASK_TIMEOUT "
                                   f"({self.task_timeout:g} s)")
            try:
                return future.result(timeout=min(self.POLL, left))
            except TimeoutError:
                idle = 0 if client.nthreads() else idle + 1
                if idle * self.POLL > self.connect_timeout:
                    raise TimeoutError("the scheduler has had no workers for "
                                       f"{idle * self.POLL:g} s") from None

    def map(self, fn, calls: list[tuple]) -> list:
        """fn(*args) for each args of `calls`, all at once on the cluster (fn module-level,
        its arguments and result plain data); each result, or None where that call
        could not run there (the caller then does it here)."""
        client = self.client() if not self.disabled else None
        if client is None or not calls:
            return [None] * len(calls)
        name = getattr(fn, "__name__", "call")
        try:
            futures = [client.submit(fn, *args, pure=False, key=f"pypto {name} {uuid.uuid4().hex}")
                       for args in calls]
        except Exception as exc:
            self._give_up(f"submitting {len(calls)} calls", exc)
            return [None] * len(calls)
        deadline = time.monotonic() + self.task_timeout
        out = []
        for f in futures:
            try:
                out.append(None if self.disabled else self._wait(client, f, deadline))
            except Exception as exc:      # the call raised (done here again), or the cluster
                out.append(None)
                if _cluster_failure(exc):
                    self._give_up(f"{len(calls)} calls", exc)
            finally:
                f.release()
        return out


def _cluster_failure(exc: BaseException) -> bool:
    """The cluster failed (timeout, lost connection, killed workers, cancelled), as
    opposed to the submitted function raising its own error."""
    return isinstance(exc, (TimeoutError, OSError)) or type(exc).__module__.split(".")[0] in (
        "distributed", "concurrent", "asyncio", "tornado")


def on_worker() -> bool:
    """True inside a task on a Dask worker (where a build must not submit again)."""
    if "distributed" not in sys.modules:
        return False
    try:
        from distributed import get_worker
        get_worker()
        return True
    except (ImportError, ValueError):
        return False


_executors: dict[str, Executor] = {}
_guard = threading.Lock()


def from_env(impl_check, environ=None) -> Executor | None:
    """This process's executor for $PYPTO_EXECUTOR (None when unset)."""
    cfg = settings(environ)
    if cfg is None:
        return None
    with _guard:
        ex = _executors.get(cfg["address"])
        if ex is None:
            ex = _executors[cfg["address"]] = Executor(impl_check=impl_check, **cfg)
        ex.impl_check = impl_check
        return ex


def forget() -> None:
    """Close and drop the process's executors (tests: a disabled one stays off)."""
    with _guard:
        for ex in _executors.values():
            if ex._client is not None:
                try:
                    ex._client.close(timeout=5)
                except Exception:
                    pass
        _executors.clear()


# -- the worker side ------------------------------------------------------------------

_store = None
_store_guard = threading.Lock()


def worker_store():
    """The worker process's store: its own $PYPTO_CACHE_DIR, backed by the remote. A
    remote tier switches itself off for good at its first failure, which suits one
    compile; a worker serves compiles for as long as it lives, so its next task opens
    the tier again."""
    global _store
    with _store_guard:
        remote = getattr(_store, "remote", None)
        if _store is None or (remote is not None and remote.disabled):
            from pypto_cache import open_store
            from pypto_cache.remote import forget_tiers
            forget_tiers()
            _store = open_store()
        return _store


def address() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return f"pid {os.getpid()}"


def remote_build(step, key: str, digests: dict[str, str], check) -> dict:
    """What a worker runs for one step: {"outputs", "worker", "seconds"} once the outputs
    and the action entry are published; {"refused": why} when its code differs from the
    client's; {"failed": why} when it could not build (the client then builds it)."""
    from pypto_pipeline.graph import step_key
    from pypto_pipeline.run import _check_outputs
    t0 = time.perf_counter()
    worker = address()
    # a module-level function, sent by reference: the worker calls its own copy (a
    # computed import here would put every module in every stage's code digest)
    fn, args = check
    mine = fn(*args)
    if mine != step.impl or step_key(step, digests) != key:
        what = " ".join(str(a) for a in args if a)
        return {"refused": (
            f"worker {worker} refuses step {step.name}: its pypto differs from the client's "
            f"(implementation digest of {what}: {mine} on the worker, {step.impl} on the "
            f"client); install the same pypto on the workers and restart them, or unset "
            f"PYPTO_EXECUTOR")}
    store = worker_store()
    if getattr(store, "remote", None) is None:
        return {"failed": f"worker {worker} has no remote cache (PYPTO_REMOTE_CACHE unset there)"}
    manifest = store.get_action(key)
    if manifest is None:
        with store.lock(key):
            manifest = store.get_action(key)
            if manifest is None:
                inputs = {}
                for name, d in digests.items():
                    data = store.get_bytes(d)
                    if data is None:
                        return {"failed": f"input {name!r} ({d}) is not in the remote cache"}
                    inputs[name] = data
                try:
                    produced = step.fn(inputs, copy.deepcopy(step.options))
                    blobs = _check_outputs(step, produced)
                except Exception as exc:
                    return {"failed": f"{type(exc).__name__}: {exc}"}
                outputs = {o: store.put_bytes(b) for o, b in blobs.items()}
                manifest = {"outputs": outputs, "stage": step.stage, "step": step.name,
                            "impl": step.impl, "inputs": dict(sorted(digests.items())),
                            "worker": worker}
    # the objects first, asked afresh (a hit here may predate what Redis holds now, or
    # Redis may have evicted what this process put there), then the entry naming them
    if not store.publish_objects(manifest["outputs"].values()):
        return {"failed": f"worker {worker} could not publish to the remote cache"}
    store.put_action(key, manifest)
    return {"outputs": {o: manifest["outputs"][o] for o in step.outputs}, "worker": worker,
            "seconds": time.perf_counter() - t0}
