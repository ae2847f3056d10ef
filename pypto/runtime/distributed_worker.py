"""`DistributedWorker`: one set of rank processes kept for several dispatches of one or
more DistributedCompiledPrograms (same platform, devices and runtime), and tensors that
stay resident between them -- a KV cache one program writes and another reads:

    with DistributedWorker([prefill, decode]) as rt:         # or prefill.prepare(extra_compiled=[decode])
        kv = rt.alloc_tensor((128, 128), torch.float32)
        rt.run(prefill, prompt, kv)
        rt.run(decode, token, kv, logits)

A resident tensor is shared memory of the worker's, passed to the ranks without a copy;
host tensors are copied in (and outputs out) per dispatch. persistent=True keeps each
program's window buffers across its dispatches (zeroed before each unless
reset_persistent_windows=False); otherwise every dispatch gets fresh zeroed windows.
"""
from __future__ import annotations

import ctypes
import math

from pypto.dtype import DataType

from .ranks import RankPool, address, dispatch, release, segment


class DistributedDeviceTensor:
    """A tensor resident in a DistributedWorker (alloc_tensor): valid as an argument of
    any of its programs until freed; read it with `rt.copy_from(host, tensor)`."""

    def __init__(self, owner, shape, dtype: DataType, shm, worker_id: int):
        self.owner, self.shape, self.dtype, self.worker_id = owner, tuple(shape), dtype, worker_id
        self._shm = shm

    @property
    def freed(self) -> bool:
        return self._shm is None

    @property
    def segment_name(self) -> str:
        return self._shm.name

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"worker {self.worker_id}"
        return f"DistributedDeviceTensor(shape={list(self.shape)}, dtype={self.dtype}, {state})"


class DistributedWorker:
    def __init__(self, compiled, config=None, *, persistent: bool = False, reset_persistent_windows=None,
                 callbacks=None, sub_worker_overrides=None, startup_timeout_s=None):
        from pypto.ir.distributed_compiled_program import DistributedCompiledProgram
        programs = list(compiled) if isinstance(compiled, (list, tuple)) else [compiled]
        if not programs:
            raise ValueError("DistributedWorker requires at least one compiled program")
        for p in programs:
            if not isinstance(p, DistributedCompiledProgram):
                raise TypeError(f"DistributedWorker takes DistributedCompiledPrograms, got {type(p).__name__}")
        first = programs[0]
        for p in programs[1:]:
            for what, a, b in (("platform", p.platform, first.platform),
                               ("device_ids", p.distributed_config.device_ids, first.distributed_config.device_ids),
                               ("runtime", p.distributed_config.runtime, first.distributed_config.runtime)):
                if a != b:
                    raise ValueError(f"multi-program mode requires the same {what}: {a!r} vs {b!r}")
        if reset_persistent_windows and not persistent:
            raise ValueError("reset_persistent_windows=True needs persistent=True (windows that outlive a dispatch)")
        bound = dict(sub_worker_overrides or {})
        bound.update(callbacks or {})
        self._callbacks = [_callbacks_of(p, bound) for p in programs]
        unknown = sorted(set(bound) - {n for p in programs for n in p.sub_worker_names})
        if unknown:
            raise ValueError(f"callbacks names {unknown} are not sub-workers of any prepared program")
        if startup_timeout_s is None:
            startup_timeout_s = 60.0
        if isinstance(startup_timeout_s, bool) or not isinstance(startup_timeout_s, (int, float)) \
                or not math.isfinite(startup_timeout_s) or startup_timeout_s <= 0:
            raise ValueError(f"startup_timeout_s must be a positive finite number, got {startup_timeout_s!r}")
        self.programs = programs
        self.persistent = persistent
        self.reset = persistent if reset_persistent_windows is None else bool(reset_persistent_windows)
        platform = config.platform if config is not None else first.platform
        self._windows: dict[int, object] = {}
        self._tensors: list[DistributedDeviceTensor] = []
        self._closed = False
        self.last_timings: dict = {}
        self.pool = RankPool(platform, first.distributed_config.device_ids, startup_timeout_s)

    # ---------------------------------------------------------------- dispatch
    def __call__(self, *args, config=None):
        if len(self.programs) > 1:
            raise TypeError("rt(*args) is ambiguous on a multi-program DistributedWorker; dispatch explicitly "
                            "with rt.run(compiled, *args)")
        return self.run(self.programs[0], *args, config=config)

    def run(self, compiled, *args, config=None) -> None:
        self._open("run")
        i = next((i for i, p in enumerate(self.programs) if p is compiled), None)
        if i is None:
            raise ValueError("rt.run(...) requires a DistributedCompiledProgram registered when this worker was "
                             "constructed")
        try:
            # each rank's launch timings of this dispatch (pypto.runtime.bench reads them)
            self.last_timings = dispatch(self.pool, compiled, args, resident=self._resident,
                                         windows=self._window(compiled), callbacks=self._callbacks[i])
        except BaseException:
            if self.pool.closed:              # a rank failed: the worker is gone with it
                self.close()
            raise

    def _resident(self, a) -> bool:
        if not isinstance(a, DistributedDeviceTensor):
            return False
        if a.owner is not self or a.freed:
            raise TypeError(f"{a!r} is not a live tensor of this worker (alloc_tensor of this "
                            f"DistributedWorker, not freed)")
        return True

    def _window(self, prog):
        if not self.persistent or not prog.plan.get("windows"):
            return None
        shm = self._windows.get(id(prog))
        if shm is None:
            shm = self._windows[id(prog)] = segment(prog.plan["window_bytes"] * self.pool.world_size)
        elif self.reset:
            ctypes.memset(address(shm.buf), 0, shm.size)
        return shm

    # ---------------------------------------------------------------- resident memory
    def alloc_tensor(self, shape, dtype, *, init=None, worker_id: int = 0) -> DistributedDeviceTensor:
        from . import dtypes
        from .tensors import host_view
        self._open("alloc_tensor")
        d = dtype if isinstance(dtype, DataType) else dtypes.from_torch_dtype(dtype)
        if d is None:
            raise TypeError(f"alloc_tensor: unsupported dtype {dtype!r}")
        if not (0 <= worker_id < self.pool.world_size):
            raise ValueError(f"alloc_tensor: worker_id {worker_id} is not a rank (0..{self.pool.world_size - 1})")
        shape = tuple(int(s) for s in shape)
        t = DistributedDeviceTensor(self, shape, d, segment(math.prod(shape) * d.nbytes), worker_id)
        if init is not None:
            v = host_view(init, "alloc_tensor(init=...)", expect=d)
            if tuple(v.shape) != shape or v.dtype is not d:
                raise TypeError(f"alloc_tensor: init is {v.dtype} {list(v.shape)}, the tensor {d} {list(shape)}")
            ctypes.memmove(address(t._shm.buf), v.addr, v.nbytes)
        self._tensors.append(t)
        return t

    def free_tensor(self, t: DistributedDeviceTensor, *, worker_id: int = 0) -> None:
        if not isinstance(t, DistributedDeviceTensor) or t.owner is not self:
            raise ValueError(f"{t!r} is not a tensor of this worker")
        if not t.freed:
            release(t._shm)
            t._shm = None

    def copy_from(self, dst, src: DistributedDeviceTensor, nbytes: int | None = None) -> None:
        """A resident tensor's bytes into a host tensor (torch or numpy, contiguous)."""
        from .tensors import host_view
        self._open("copy_from")
        self._resident(src)
        v = host_view(dst, "copy_from(dst)", writable=True)
        n = src.nbytes if nbytes is None else int(nbytes)
        if n > v.nbytes or n > src.nbytes:
            raise ValueError(f"copy_from: {n} bytes do not fit ({v.nbytes} in dst, {src.nbytes} in src)")
        ctypes.memmove(v.addr, address(src._shm.buf), n)

    def copy_to(self, dst: DistributedDeviceTensor, src, nbytes: int | None = None) -> None:
        """A host tensor's bytes into a resident tensor."""
        from .tensors import host_view
        self._open("copy_to")
        self._resident(dst)
        v = host_view(src, "copy_to(src)")
        n = v.nbytes if nbytes is None else int(nbytes)
        if n > v.nbytes or n > dst.nbytes:
            raise ValueError(f"copy_to: {n} bytes do not fit ({v.nbytes} in src, {dst.nbytes} in dst)")
        ctypes.memmove(address(dst._shm.buf), v.addr, n)

    # ---------------------------------------------------------------- lifetime
    def _open(self, op: str) -> None:
        if self._closed:
            raise RuntimeError(f"DistributedWorker.{op}() called after close()")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.pool.close()
        for t in self._tensors:
            if not t.freed:
                release(t._shm)
                t._shm = None
        for shm in self._windows.values():
            release(shm)
        self._windows.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _callbacks_of(prog, bound: dict) -> dict:
    """A program's SubWorkers: the concrete ones as written, the `...` ones as bound."""
    import inspect
    missing = [n for n in prog.abstract_sub_workers if n not in bound]
    if missing:
        raise ValueError(f"SubWorkers {missing} are runtime-bound callbacks (declared with a `...` body) and "
                         f"must be supplied via callbacks={{...}}")
    out = prog.sub_worker_callables()
    for name in prog.abstract_sub_workers:
        fn = bound[name]
        try:
            inspect.signature(fn).bind(None)
        except (TypeError, ValueError):
            raise TypeError(f"callback {name!r} must accept a single positional argument fn(args)") from None
        out[name] = fn
    return out


__all__ = ["DistributedWorker", "DistributedDeviceTensor"]
