"""CompiledProgram: a handle to a compiled output directory that can be called."""
from __future__ import annotations

import functools
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .artifacts import ChipCallable
    from .config import RunConfig
    from .tensors import Param

# what CompiledProgram reads from the output directory's metadata (on first use)
_META = frozenset({"meta", "kernel_config", "params", "param_names", "output_indices",
                   "has_return", "runtime_config", "runtime_name", "platform", "backend_type",
                   "orchestration_names"})


class CompiledProgram:
    """The artifacts of one compile (kernel binaries, orchestration, metadata).

    `compiled(a, b, out)` runs in place and returns the Out tensor(s) when the program
    returns something; `out = compiled(a, b)` leaves the Out parameters off and gets
    them allocated and returned. Inside `with ChipWorker(...)` the call runs on that
    worker, otherwise on the process's shared worker for its platform and runtime
    (runtime.shared).
    """

    def __init__(self, output_dir, *, program: Any = None, check: bool = True):
        """`check=False`: read the metadata when it is first needed (ir.compile's
        artifacts were just built or checked against their digests)."""
        self.output_dir = Path(output_dir)
        self.program = program
        self._chip: ChipCallable | None = None
        self._lock = threading.Lock()
        if check:
            self._load()

    def __getattr__(self, name):
        if name in _META and "_lock" in self.__dict__:
            self._load()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _load(self) -> None:
        """Read and check compiled_meta.json and kernel_config.py."""
        from .artifacts import COMPILED_META, KERNEL_CONFIG, kernel_table, read_kernel_config, read_meta
        from .config import PLATFORMS, backend_for_platform, runtime_kind_name
        from .errors import ArtifactError
        from .tensors import parse_params
        meta_path = self.output_dir / COMPILED_META
        meta = read_meta(meta_path)
        kernel_config = read_kernel_config(self.output_dir / KERNEL_CONFIG)
        kernel_table(self.output_dir, kernel_config["KERNELS"])
        params: list[Param] = parse_params(meta["params"], str(meta_path))
        runtime_config = dict(kernel_config["RUNTIME_CONFIG"])

        meta_runtime = meta.get("runtime")
        cfg_runtime = runtime_config.get("runtime")
        try:
            names = {runtime_kind_name(r) for r in (meta_runtime, cfg_runtime) if r is not None}
        except ValueError as e:
            raise ArtifactError(f"{self.output_dir}: {e}") from e
        if len(names) > 1:
            raise ArtifactError(f"{self.output_dir}: compiled_meta.json says runtime {meta_runtime!r} "
                                f"but kernel_config.py says {cfg_runtime!r}")

        platform = meta.get("platform") or runtime_config.get("platform")
        if platform not in PLATFORMS:
            raise ArtifactError(f"{meta_path}: unknown platform {platform!r}; valid platforms are "
                                f"{', '.join(PLATFORMS)}")
        cfg_platform = runtime_config.get("platform")
        if cfg_platform is not None and cfg_platform != platform:
            raise ArtifactError(f"{self.output_dir}: compiled_meta.json says platform {platform!r} "
                                f"but kernel_config.py says {cfg_platform!r}")

        orch = kernel_config["ORCHESTRATION"]
        orchs = orch if isinstance(orch, list) else [orch]
        n_tensors = sum(1 for p in params if p.is_tensor)
        for o in orchs:
            sig = o.get("signature")
            if sig is not None and len(sig) != n_tensors:
                raise ArtifactError(
                    f"{self.output_dir / KERNEL_CONFIG}: orchestration signature has {len(sig)} "
                    f"tensors, compiled_meta.json {n_tensors} tensor parameters")
        # all checked: publish every attribute at once
        self.__dict__.update(
            meta=meta, kernel_config=kernel_config, params=params,
            param_names=[p.name for p in params],
            output_indices=[i for i, p in enumerate(params) if p.is_tensor and p.direction == "Out"],
            has_return=int(meta.get("num_return_types", 0) or 0) > 0,
            runtime_config=runtime_config,
            runtime_name=names.pop() if names else runtime_kind_name(None),
            platform=platform,
            backend_type=meta.get("backend_type") or backend_for_platform(platform),
            orchestration_names=[str(o.get("name", "")) for o in orchs] if len(orchs) > 1 else [])

    @classmethod
    def from_dir(cls, path, platform: str | None = None) -> "CompiledProgram":
        """A compiled output directory, without the program's IR. `platform`, when given,
        must be the one it was compiled for."""
        compiled = cls(path)
        if platform is not None and platform != compiled.platform:
            from .errors import PlatformMismatchError
            raise PlatformMismatchError(f"{compiled.output_dir} was compiled for platform "
                                        f"{compiled.platform!r}, not {platform!r}")
        return compiled

    # -- binaries ------------------------------------------------------------------------
    @property
    def chip_callable(self) -> ChipCallable:
        """The digest-verified, loaded orchestration and kernels (loaded on first use)."""
        if self._chip is None:
            with self._lock:
                if self._chip is None:
                    from .artifacts import load_chip_callable
                    self._chip = load_chip_callable(self.output_dir, self.kernel_config)
        return self._chip

    def load(self) -> "CompiledProgram":
        self.chip_callable
        return self

    @property
    def kernels(self) -> list[dict]:
        return list(self.kernel_config["KERNELS"])

    # -- calling -------------------------------------------------------------------------
    def __call__(self, *args, config: RunConfig | None = None):
        current_worker, handle_for, shared_worker, runtime_kind_name = _CALL or _call_helpers()
        worker = current_worker()
        if worker is not None:
            return worker.run(self, *args, config=config)
        if config is None:
            platform, runtime, device = self.platform, self.runtime_name, 0
        else:
            platform, device = config.platform, config.device_id
            runtime = self.runtime_name if config.runtime is None else runtime_kind_name(config.runtime)
        return handle_for(shared_worker(platform, runtime, device), self)(*args, config=config)

    def _prepare_call(self, args: tuple):
        """Full argument list, plus the indices of Out tensors allocated here."""
        n = len(self.params)
        if len(args) == n:
            return tuple(args), None
        if self.output_indices and len(args) == n - len(self.output_indices):
            full: list = []
            given = iter(args)
            for i, p in enumerate(self.params):
                full.append(None if i in self.output_indices else next(given))
            want_numpy = _wants_numpy(args)
            for i in self.output_indices:
                full[i] = _allocate_output(self.params[i], want_numpy)
            return tuple(full), list(self.output_indices)
        leave = f" (or {n - len(self.output_indices)} leaving off the Out parameters " \
                f"{', '.join(self.param_names[i] for i in self.output_indices)})" if self.output_indices else ""
        raise TypeError(f"{self._name()} takes {n} arguments ({', '.join(self.param_names)}){leave}; "
                        f"got {len(args)}")

    def _results(self, full_args: tuple, allocated):
        if allocated is not None:
            indices = allocated
        else:
            indices = self._returned
        if not indices:
            return None
        outs = tuple(full_args[i] for i in indices)
        return outs[0] if len(outs) == 1 else outs

    @functools.cached_property
    def _returned(self) -> list:
        """The arguments a call returns when it allocated none: its Out tensors (else its
        InOut ones), or none when the program returns nothing."""
        if not self.has_return:
            return []
        return self.output_indices or [i for i, p in enumerate(self.params)
                                       if p.is_tensor and p.direction == "InOut"]

    def _name(self) -> str:
        orch = self.kernel_config["ORCHESTRATION"]
        if isinstance(orch, dict) and orch.get("name"):
            return str(orch["name"])
        return self.output_dir.name

    # -- path-like ------------------------------------------------------------------------
    def __fspath__(self) -> str:
        return os.fspath(self.output_dir)

    def __str__(self) -> str:
        return str(self.output_dir)

    def __repr__(self) -> str:
        return (f"CompiledProgram({str(self.output_dir)!r}, platform={self.platform!r}, "
                f"runtime={self.runtime_name!r}, params={self.param_names})")


def _wants_numpy(args) -> bool:
    """Allocate numpy outputs when every tensor given is a numpy array (so a numpy-only
    caller never pays for importing torch); torch otherwise."""
    from .tensors import is_numpy_array, is_torch_tensor
    tensors = [a for a in args if is_torch_tensor(a) or is_numpy_array(a)]
    if tensors and all(is_numpy_array(a) for a in tensors):
        return True
    try:
        import torch  # noqa: F401
    except ImportError:
        return True
    return False


def _allocate_output(param: Param, want_numpy: bool):
    if any(n < 0 for n in param.shape):
        raise TypeError(f"parameter '{param.name}' has a dynamic shape {param.describe_shape()}; "
                        "pass the output tensor explicitly")
    from . import dtypes
    if want_numpy:
        import numpy as np
        return np.zeros(param.shape, dtype=dtypes.numpy_dtype(param.dtype))
    import torch
    return torch.zeros(param.shape, dtype=dtypes.torch_dtype(param.dtype))


_CALL: tuple = ()


def _call_helpers() -> tuple:
    """What a call needs of the worker modules, imported once (an import statement in
    __call__ would cost each call a few microseconds)."""
    global _CALL
    from .config import runtime_kind_name
    from .shared import handle_for, shared_worker
    from .worker import current_worker
    _CALL = (current_worker, handle_for, shared_worker, runtime_kind_name)
    return _CALL
