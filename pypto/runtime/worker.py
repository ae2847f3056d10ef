"""ChipWorker: one (simulated) chip, its resident tensors and registered programs."""
from __future__ import annotations

import abc
import threading
import time
from collections import OrderedDict
from typing import Any

from . import dfx, dtypes, fastpath
from .config import RunConfig, runtime_kind_name
from .device import Device
from .errors import DeviceUnavailableError, PlatformMismatchError
from .executor import execute
from .records import RunRecord
from .tensors import (DeviceTensor, aligned_buffer, bind_arguments, copy_bytes, host_source,
                      host_view, is_numpy_array, is_torch_tensor)

_local = threading.local()


def _stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def current_worker() -> "ChipWorker | None":
    """The innermost active `with ChipWorker(...)` of this thread, if any."""
    stack = _stack()
    return stack[-1] if stack else None


class RegistrationHandle:
    """A program registered on a worker: call it like the program itself."""

    def __init__(self, worker: "ChipWorker", compiled):
        self.worker = worker
        self.compiled = compiled
        self.graphs: OrderedDict = OrderedDict()   # binding key -> Graph (executor.py)
        self.plan = None                           # fastpath.Plan of the last replay
        self.active = True

    def __call__(self, *args, config: RunConfig | None = None):
        return self.launch(*args, config=config)[0]

    def launch(self, *args, config: RunConfig | None = None):
        """Run once; returns (what the call returns, the launch's RunRecord)."""
        plan = self.plan        # (None once unregistered)
        if plan is not None and config is None and fastpath.identity(args) == plan.identity:
            return fastpath.call(self.worker, plan, args, time.perf_counter_ns())
        if not self.active:
            raise RuntimeError(f"program {self.compiled.output_dir} was unregistered")
        return self.worker._dispatch(self, args, config)

    def unregister(self) -> None:
        if self.active:
            self.active = False
            self.graphs.clear()
            self.plan = None
            self.worker._forget(self)

    def __enter__(self) -> "RegistrationHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.unregister()

    def __repr__(self) -> str:
        state = "active" if self.active else "unregistered"
        return f"<RegistrationHandle {self.compiled.output_dir} ({state})>"


def ensure_pto_isa_root() -> None:
    """PyPTO resolves its PTO-ISA checkout here before building the on-board runtime; the
    simulator needs none, and there is no on-board runtime to build on this machine."""
    raise DeviceUnavailableError(
        "the on-board runtime (and the PTO-ISA sources it is built from) needs an Ascend NPU "
        "and its vendor toolchain, which this machine does not have; the a2a3sim / a5sim "
        "platforms need neither")


class Worker(abc.ABC):
    """What every worker offers (PyPTO's Worker base class): programs registered once and
    launched through their handles, device-resident tensors, close()."""

    @abc.abstractmethod
    def register(self, compiled): ...

    @abc.abstractmethod
    def run(self, compiled, *args, config=None): ...

    @abc.abstractmethod
    def alloc_tensor(self, shape, dtype, init=None): ...

    @abc.abstractmethod
    def free_tensor(self, tensor) -> None: ...

    @abc.abstractmethod
    def copy_to(self, dst, src, nbytes=None): ...

    @abc.abstractmethod
    def copy_from(self, dst, src, nbytes=None): ...

    @abc.abstractmethod
    def close(self) -> None: ...


class ChipWorker(Worker):
    """A simulated chip.

    `with ChipWorker(config=RunConfig(platform="a2a3sim")) as w:` makes it the worker
    that `compiled(*args)` dispatches to on this thread; leaving the block closes it.
    """

    def __init__(self, config: RunConfig | None = None, **kwargs: Any):
        if config is None:
            config = RunConfig(**kwargs)
        elif kwargs:
            config = config.replace(**kwargs)
        if not isinstance(config, RunConfig):
            raise TypeError(f"config must be a RunConfig, got {type(config).__name__}")
        if not config.is_simulator:
            raise DeviceUnavailableError(
                f"platform {config.platform!r} needs an Ascend NPU and its vendor runtime, "
                f"which this machine does not have; run on '{config.platform}sim' instead")
        self.config = config
        self.platform = config.platform
        self.runtime = config.runtime_name
        self.device_id = config.device_id
        self._device: Device | None = None
        self._registrations: dict[int, RegistrationHandle] = {}
        self._tensors: dict[int, DeviceTensor] = {}
        self._loaded: set[str] = set()        # programs registered here (aicpu_dlopen_count)
        self._run_lock = threading.Lock()
        self._lock = threading.Lock()
        self.closed = False
        self.last_run: RunRecord | None = None
        self.stats = {"launches": 0, "orchestration_runs": 0, "graph_replays": 0,
                      "copies_to_device": 0, "copies_from_device": 0,
                      "bytes_to_device": 0, "bytes_from_device": 0}

    @property
    def aicpu_dlopen_count(self) -> int:
        """How many distinct programs this worker has loaded: on a device, the AICPU loads
        a program's code when it is first registered and keeps it (PyPTO's counter)."""
        return len(self._loaded)

    @property
    def _owned_tensors(self) -> list:
        """The DeviceTensors this worker allocated and still holds (close() frees them)."""
        with self._lock:
            return list(self._tensors.values())

    # -- lifetime ----------------------------------------------------------------------
    def init(self) -> "ChipWorker":
        self._check_open()
        if self._device is None:
            self._device = Device(self.config.arch)
            self._device.start()
        return self

    def __enter__(self) -> "ChipWorker":
        self.init()
        _stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        stack = _stack()
        if self in stack:
            # remove the innermost occurrence
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is self:
                    del stack[i]
                    break
        self.close()

    def close(self) -> None:
        """Free every DeviceTensor and registration the caller left behind, and stop the
        core threads. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            tensors = list(self._tensors.values())
            self._tensors.clear()
            handles = list(self._registrations.values())
            self._registrations.clear()
        for t in tensors:
            t._release()
        for h in handles:
            h.active = False
            h.graphs.clear()
            h.plan = None
        with self._run_lock:
            if self._device is not None:
                self._device.stop()
                self._device = None

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("ChipWorker is closed")

    # -- programs ----------------------------------------------------------------------
    def check_compatible(self, compiled) -> None:
        """Refuse a program built for another platform or runtime kind."""
        if compiled.platform != self.platform:
            raise PlatformMismatchError(
                f"program {compiled.output_dir} was built for platform '{compiled.platform}' but "
                f"this ChipWorker runs '{self.platform}'; compile with platform='{self.platform}' "
                f"or use ChipWorker(config=RunConfig(platform='{compiled.platform}'))")
        if compiled.runtime_name != self.runtime:
            raise PlatformMismatchError(
                f"program {compiled.output_dir} was built for runtime '{compiled.runtime_name}' "
                f"but this ChipWorker is bound to runtime '{self.runtime}'; compile with "
                f"runtime={self.runtime.upper()} or bind the worker with "
                f"RunConfig(runtime='{compiled.runtime_name}')")

    def register(self, compiled) -> RegistrationHandle:
        """Check and load a program once; the handle runs it without repeating that work."""
        self._check_open()
        self.check_compatible(compiled)
        with self._lock:
            handle = self._registrations.get(id(compiled))
            if handle is not None and handle.compiled is compiled and handle.active:
                return handle
        compiled.load()
        with self._lock:
            self._check_open()
            handle = self._registrations.get(id(compiled))
            if handle is None or handle.compiled is not compiled or not handle.active:
                handle = RegistrationHandle(self, compiled)
                self._registrations[id(compiled)] = handle
                self._loaded.add(str(compiled.output_dir))   # the device loads its code now
        return handle

    def _forget(self, handle: RegistrationHandle) -> None:
        with self._lock:
            if self._registrations.get(id(handle.compiled)) is handle:
                del self._registrations[id(handle.compiled)]

    def run(self, compiled, *args, config: RunConfig | None = None):
        """Run a program with the given arguments (in-place or return style)."""
        return self.register(compiled)(*args, config=config)

    def run_with_record(self, compiled, *args, config: RunConfig | None = None):
        """Like run(), but returns (result, RunRecord of this launch)."""
        return self.register(compiled).launch(*args, config=config)

    def _dispatch(self, handle: RegistrationHandle, args: tuple, config: RunConfig | None):
        call_ns = time.perf_counter_ns()
        self._check_open()
        compiled = handle.compiled
        cfg = self.config if config is None else config
        if config is not None:
            if config.platform != self.platform:
                raise PlatformMismatchError(
                    f"run config asks for platform '{config.platform}' but this ChipWorker "
                    f"runs '{self.platform}'")
            if config.runtime is not None and runtime_kind_name(config.runtime) != self.runtime:
                raise PlatformMismatchError(
                    f"run config asks for runtime '{runtime_kind_name(config.runtime)}' but this "
                    f"ChipWorker is bound to '{self.runtime}'")
        plan = handle.plan
        # (a config that asks for no DFX file changes nothing a replay does)
        if plan is not None and fastpath.identity(args) == plan.identity and \
                (config is None or not dfx.wanted(config)):
            return fastpath.call(self, plan, args, call_ns)
        full_args, outputs = compiled._prepare_call(args)
        binding = bind_arguments(compiled.params, full_args, worker=self)
        chip = compiled.chip_callable
        record = RunRecord(str(compiled.output_dir), self.platform, self.runtime)
        record.call_ns = call_ns
        record.measure_moves = dfx.swimlane_level(cfg) > 0
        if cfg.enable_dump_args:
            record.arg_dumps = []
        keep = bool(cfg.enable_dump_args) or bool(cfg.enable_dep_gen)
        # deps.json wants every edge, also those to tasks finished before the submit
        exact = bool(cfg.enable_dep_gen)
        try:
            with self._run_lock:
                self._check_open()
                self.init()
                self.stats["launches"] += 1
                try:
                    execute(self._device, chip, binding, self.runtime, record, handle.graphs, keep,
                            exact_deps=exact)
                finally:
                    self.last_run = record
                    if record.orchestration_start_ns:
                        self.stats["orchestration_runs"] += 1
                    if record.replayed:
                        self.stats["graph_replays"] += 1
        except Exception:
            if dfx.wanted(cfg):
                try:    # the records of a failed launch are what one debugs it with
                    dfx.write_outputs(record, compiled, cfg)
                except Exception:
                    pass
            raise
        if dfx.wanted(cfg):
            dfx.write_outputs(record, compiled, cfg)
        # a replay of one plain kernel with these tensors: the next such call goes straight
        # to the kernel (fastpath.py)
        handle.plan = None
        if record.replayed and outputs is None and not dfx.wanted(cfg):
            graph = handle.graphs.get(binding.key)
            if graph:
                handle.plan = fastpath.make_plan(full_args, graph, record.n_threads,
                                                 str(compiled.output_dir), compiled._returned)
        return compiled._results(full_args, outputs), record

    # -- resident tensors --------------------------------------------------------------
    def alloc_tensor(self, shape, dtype, init: Any = None) -> DeviceTensor:
        """A tensor in device memory; `init` is None (zeros), a number (fill) or a host
        tensor/array of the same size (copied in)."""
        self._check_open()
        dt = dtypes.to_dtype(dtype)
        shape = tuple(int(n) for n in (shape if isinstance(shape, (list, tuple)) else [shape]))
        if any(n < 0 for n in shape) or len(shape) > 5:
            raise ValueError(f"alloc_tensor: bad shape {list(shape)} (non-negative, at most 5 dims)")
        numel = 1
        for n in shape:
            numel *= n
        tensor = DeviceTensor(self, shape, dt, aligned_buffer(numel * dt.nbytes))
        if init is not None:
            if isinstance(init, (bool, int, float)):
                self._fill(tensor, init)
            else:
                self.copy_to(tensor, init)
        with self._lock:
            self._tensors[id(tensor)] = tensor
        return tensor

    def _fill(self, tensor: DeviceTensor, value) -> None:
        import numpy as np
        if tensor.nbytes == 0:
            return
        raw = tensor._buffer
        if tensor.dtype.name == "BF16":
            raw.view(np.uint16)[:] = dtypes.scalar_bits(value, tensor.dtype)
        else:
            raw.view(dtypes.numpy_dtype(tensor.dtype))[:] = value

    def free_tensor(self, tensor: DeviceTensor) -> None:
        if not isinstance(tensor, DeviceTensor):
            raise TypeError(f"free_tensor expects a DeviceTensor, got {type(tensor).__name__}")
        if tensor.worker is not self:
            raise ValueError("DeviceTensor belongs to another ChipWorker")
        with self._lock:
            self._tensors.pop(id(tensor), None)
        tensor._release()

    def _device_range(self, addr, nbytes, what: str) -> int:
        """`addr` as an int, once [addr, addr + nbytes) lies inside one of this worker's
        live tensors (a raw copy must not reach memory the device does not hold)."""
        if isinstance(addr, bool) or not isinstance(addr, int) or isinstance(nbytes, bool) \
                or not isinstance(nbytes, int) or nbytes < 0:
            raise TypeError(f"{what}(dst, src, nbytes): addresses and nbytes are ints "
                            f"(t.data_ptr, t.nbytes), got {type(addr).__name__} and {nbytes!r}")
        a = int(addr)
        with self._lock:
            tensors = list(self._tensors.values())
        for t in tensors:
            if not t.freed and t.data_ptr <= a and a + nbytes <= t.data_ptr + t.nbytes:
                return a
        raise ValueError(f"{what}: [0x{a:x}, +{nbytes}) is not inside a live DeviceTensor of "
                         f"this ChipWorker")

    def _own(self, tensor, what: str) -> DeviceTensor:
        if not isinstance(tensor, DeviceTensor):
            raise TypeError(f"{what}: expected a DeviceTensor, got {type(tensor).__name__}")
        if tensor.worker is not self:
            raise ValueError(f"{what}: DeviceTensor belongs to another ChipWorker")
        if tensor.freed:
            raise ValueError(f"{what}: DeviceTensor was freed")
        return tensor

    def copy_to(self, dst, src, nbytes: int | None = None):
        """Host -> device: copy a torch tensor / numpy array into a DeviceTensor. With
        `nbytes`, the raw form: copy_to(device address, host address, nbytes), the device
        bytes inside one of this worker's tensors."""
        self._check_open()
        if nbytes is not None:
            copy_bytes(self._device_range(dst, nbytes, "copy_to"), int(src), int(nbytes))
            self.stats["copies_to_device"] += 1
            self.stats["bytes_to_device"] += int(nbytes)
            return None
        dst = self._own(dst, "copy_to")
        holder, addr = host_source(src, "copy_to source", dst.dtype, dst.numel())
        copy_bytes(dst.data_ptr(), addr, dst.nbytes)
        del holder
        self.stats["copies_to_device"] += 1
        self.stats["bytes_to_device"] += dst.nbytes
        return dst

    def copy_from(self, dst, src, nbytes: int | None = None):
        """Device -> host: copy a DeviceTensor into a contiguous torch tensor / numpy
        array of the same size and dtype. Returns dst. With `nbytes`, the raw form:
        copy_from(host address, device address, nbytes), the device bytes inside one of
        this worker's tensors."""
        self._check_open()
        if nbytes is not None:
            copy_bytes(int(dst), self._device_range(src, nbytes, "copy_from"), int(nbytes))
            self.stats["copies_from_device"] += 1
            self.stats["bytes_from_device"] += int(nbytes)
            return None
        src = self._own(src, "copy_from")
        if not (is_torch_tensor(dst) or is_numpy_array(dst)):
            raise TypeError(f"copy_from: destination must be a torch.Tensor or numpy.ndarray, "
                            f"got {type(dst).__name__}")
        view = host_view(dst, "copy_from destination", writable=True, expect=src.dtype)
        if view.dtype is None or not dtypes.accepts(src.dtype, view.dtype):
            raise TypeError(f"copy_from: destination dtype {view.dtype} does not match the "
                            f"device tensor's {src.dtype}")
        if view.nbytes != src.nbytes:
            raise ValueError(f"copy_from: destination holds {view.nbytes} bytes, the device "
                             f"tensor {src.nbytes}")
        copy_bytes(view.addr, src.data_ptr(), src.nbytes)
        self.stats["copies_from_device"] += 1
        self.stats["bytes_from_device"] += src.nbytes
        return dst

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<ChipWorker {self.platform} runtime={self.runtime} device={self.device_id} ({state})>"
