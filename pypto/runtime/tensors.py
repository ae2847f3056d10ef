"""Tensors at the edge of a run: caller tensors, DeviceTensors, and their binding.

Caller tensors (contiguous CPU torch tensors or numpy arrays) are passed by their data
pointers: nothing is copied in or back. DeviceTensors are host buffers owned by a
ChipWorker that stay resident between launches. torch is never imported here unless a
caller already imported it or asked for torch outputs.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, NamedTuple

from pypto.dtype import DataType

from . import dtypes
from .orchestration import BufferSpec

ALIGN = 64


def aligned_buffer(nbytes: int, align: int = ALIGN):
    """A zero-filled numpy uint8 array of nbytes whose data address is align-aligned."""
    import numpy as np
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    skip = (-raw.ctypes.data) % align
    return raw[skip:skip + nbytes]


@dataclass(frozen=True)
class Param:
    name: str
    kind: str                  # "tensor" | "scalar"
    direction: str             # "In" | "Out" | "InOut"
    dtype: DataType
    shape: tuple | None        # -1 marks a dynamic dim

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"

    def describe_shape(self) -> str:
        return "[" + ", ".join("?" if n < 0 else str(n) for n in self.shape) + "]"


_DIRECTIONS = {"in": "In", "out": "Out", "inout": "InOut"}


def parse_params(raw: list, where: str) -> list[Param]:
    from .errors import ArtifactError
    params = []
    for i, p in enumerate(raw):
        if not isinstance(p, dict) or "name" not in p or "dtype" not in p:
            raise ArtifactError(f"{where}: params[{i}] needs at least 'name' and 'dtype'")
        kind = p.get("kind") or ("tensor" if "shape" in p else "scalar")
        if kind not in ("tensor", "scalar"):
            raise ArtifactError(f"{where}: parameter '{p['name']}' has kind {kind!r}")
        direction = _DIRECTIONS.get(str(p.get("direction", "In")).lower())
        if direction is None:
            raise ArtifactError(f"{where}: parameter '{p['name']}' has direction {p.get('direction')!r}")
        try:
            dt = dtypes.to_dtype(p["dtype"])
        except ValueError as e:
            raise ArtifactError(f"{where}: parameter '{p['name']}': {e}") from e
        shape = None
        if kind == "tensor":
            if not isinstance(p.get("shape"), list):
                raise ArtifactError(f"{where}: tensor parameter '{p['name']}' has no shape list")
            shape = tuple(int(n) for n in p["shape"])
            if shape and shape[-1] >= 0:                    # (FP4: the storage holds pairs)
                shape = dt.stored(shape)
            if len(shape) > 5:
                raise ArtifactError(f"{where}: parameter '{p['name']}' has {len(shape)} dims (max 5)")
        params.append(Param(str(p["name"]), kind, direction, dt, shape))
    return params


class Address(int):
    """An address read as an int or called like torch's data_ptr()."""

    def __call__(self) -> int:
        return int(self)


class DeviceTensor:
    """A tensor resident in (simulated) device memory, owned by a ChipWorker.

    A launch passes its buffer address straight to the kernels; data moves only through
    ChipWorker.copy_to / copy_from.
    """

    def __init__(self, worker, shape, dtype: DataType, buffer):
        self._worker = worker
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dtype
        self._buffer = buffer
        self._addr = Address(buffer.ctypes.data)    # the buffer never moves: read once

    @property
    def worker(self):
        return self._worker

    @property
    def freed(self) -> bool:
        return self._buffer is None

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.nbytes

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def data_ptr(self) -> "Address":
        """The buffer's address: an int (`t.data_ptr`, as PyPTO reads it) that may also be
        called (`t.data_ptr()`, torch's spelling)."""
        if self._buffer is None:
            raise ValueError("DeviceTensor was freed")
        return self._addr

    def _release(self) -> None:
        self._buffer = None

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"addr=0x{self.data_ptr():x}"
        return f"DeviceTensor(shape={list(self.shape)}, dtype={self.dtype}, {state})"


# -- looking at caller tensors ----------------------------------------------------------
def is_torch_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def is_numpy_array(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def is_tensor_like(x: Any) -> bool:
    return isinstance(x, DeviceTensor) or is_torch_tensor(x) or is_numpy_array(x)


class HostView(NamedTuple):
    addr: int
    shape: tuple
    dtype: DataType | None
    nbytes: int
    kind: str


def host_view(x: Any, what: str, writable: bool = False, expect: DataType | None = None) -> HostView:
    """Address, shape and dtype of a contiguous CPU torch tensor or numpy array."""
    if is_torch_tensor(x):
        if not x.is_cpu:
            raise ValueError(f"{what}: tensor is on {x.device}; the simulator needs CPU tensors")
        if not x.is_contiguous():
            raise ValueError(f"{what}: tensor is not contiguous; pass .contiguous()")
        dt = dtypes.from_torch_dtype(x.dtype)
        if expect is not None and dt is not None and dtypes.accepts(expect, dt):
            dt = expect
        return HostView(x.data_ptr(), tuple(x.shape), dt, x.nbytes, "torch")
    if is_numpy_array(x):
        if not x.flags.c_contiguous:
            raise ValueError(f"{what}: array is not C-contiguous; pass numpy.ascontiguousarray(...)")
        if not x.flags.aligned:
            raise ValueError(f"{what}: array is not aligned")
        if writable and not x.flags.writeable:
            raise ValueError(f"{what}: array is read-only but the program writes it")
        if expect is not None and dtypes.accepts_numpy(expect, x.dtype):
            dt = expect
        else:
            dt = dtypes.from_numpy_dtype(x.dtype)
        return HostView(int(x.ctypes.data), tuple(x.shape), dt, int(x.nbytes), "numpy")
    raise TypeError(f"{what}: expected a torch.Tensor or numpy.ndarray, got {type(x).__name__}")


# -- binding a call's arguments -----------------------------------------------------------
@dataclass
class Binding:
    buffers: list          # BufferSpec per tensor parameter
    addrs: list            # data address per tensor parameter
    scalars: list          # uint64 bit patterns, scalar parameters in order
    keep: list             # the caller objects (kept alive for the launch)
    key: tuple             # what a recorded graph depends on


def bind_arguments(params: list[Param], args: tuple, worker=None) -> Binding:
    if len(args) != len(params):
        raise TypeError(f"expected {len(params)} arguments, got {len(args)}")
    buffers_raw, addrs, scalars, keep = [], [], [], []
    torch = sys.modules.get("torch")
    tensor_type = torch.Tensor if torch is not None else ()
    for p, a in zip(params, args):
        if not p.is_tensor:
            what = f"parameter '{p.name}'"
            if is_tensor_like(a):
                raise TypeError(f"{what} is a {p.dtype} scalar; got a tensor")
            try:
                scalars.append(dtypes.scalar_bits(a, p.dtype))
            except (TypeError, ValueError) as e:
                raise type(e)(f"{what}: {e}") from None
            keep.append(a)
            continue
        if type(a) is tensor_type and a.is_cpu and a.is_contiguous() \
                and dtypes.from_torch_dtype(a.dtype) is p.dtype:
            # the common case, checked in few calls (the general path names any problem)
            shape = tuple(a.shape)
            view = HostView(a.data_ptr(), shape, p.dtype, a.nbytes, "torch")
        elif isinstance(a, DeviceTensor):
            what = f"parameter '{p.name}'"
            if a.freed:
                raise ValueError(f"{what}: DeviceTensor was freed")
            if worker is not None and a.worker is not worker:
                raise ValueError(f"{what}: DeviceTensor belongs to another ChipWorker")
            view = HostView(a.data_ptr(), a.shape, a.dtype, a.nbytes, "device")
        else:
            what = f"parameter '{p.name}'"
            if not (is_torch_tensor(a) or is_numpy_array(a)):
                raise TypeError(f"{what} expects a tensor (torch.Tensor, numpy.ndarray or "
                                f"DeviceTensor), got {type(a).__name__}")
            view = host_view(a, what, writable=p.direction != "In", expect=p.dtype)
        if view.dtype is not p.dtype and (view.dtype is None or not dtypes.accepts(p.dtype, view.dtype)):
            got = view.dtype if view.dtype is not None else getattr(a, "dtype", "?")
            raise TypeError(f"parameter '{p.name}' expects dtype {p.dtype}, got {got}")
        if len(view.shape) != len(p.shape) or any(
                want >= 0 and want != got for want, got in zip(p.shape, view.shape)):
            raise ValueError(f"parameter '{p.name}' expects shape {p.describe_shape()}, "
                             f"got {list(view.shape)}")
        buffers_raw.append((p.dtype.code, tuple(view.shape), view.nbytes))
        addrs.append(view.addr)
        keep.append(a)
    groups = _alias_groups(addrs, [b[2] for b in buffers_raw])
    buffers = [BufferSpec(code, shape, nbytes, g, off)
               for (code, shape, nbytes), (g, off) in zip(buffers_raw, groups)]
    key = (tuple(buffers), tuple(scalars))
    return Binding(buffers, addrs, scalars, keep, key)


def _alias_groups(addrs: list, sizes: list) -> list:
    """(group, byte offset in group) per buffer: buffers whose byte ranges overlap share a
    group (e.g. the same tensor passed twice); all others get their own."""
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    if all(sizes) and all(addrs[i] + sizes[i] <= addrs[j] for i, j in zip(order, order[1:])):
        return [(i, 0) for i in range(len(addrs))]        # all apart: the common case
    order = sorted(range(len(addrs)), key=lambda i: (addrs[i], -sizes[i]))
    result = [None] * len(addrs)
    group, base, end = -1, 0, -1
    for i in order:
        lo, hi = addrs[i], addrs[i] + sizes[i]
        if sizes[i] == 0 or lo >= end:
            group += 1
            base, end = lo, hi
        else:
            end = max(end, hi)
        result[i] = (group, lo - base)
    # Renumber groups by first appearance in parameter order so keys do not depend on
    # where memory happens to be.
    renumber: dict[int, int] = {}
    for i in range(len(result)):
        g = result[i][0]
        renumber.setdefault(g, len(renumber))
    return [(renumber[g], off) for g, off in result]


# -- explicit host <-> device copies ----------------------------------------------------
def copy_bytes(dst_addr: int, src_addr: int, nbytes: int) -> None:
    if nbytes:
        import ctypes
        ctypes.memmove(dst_addr, src_addr, nbytes)


def host_source(src: Any, what: str, dtype: DataType, numel: int):
    """A contiguous host object holding src's data (copied only if src is not
    contiguous), plus its address."""
    if is_torch_tensor(src):
        t = src.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        view = host_view(t, what, expect=dtype)
        holder = t
    elif is_numpy_array(src):
        import numpy as np
        arr = np.ascontiguousarray(src)
        view = host_view(arr, what, expect=dtype)
        holder = arr
    else:
        raise TypeError(f"{what}: expected a torch.Tensor or numpy.ndarray, got {type(src).__name__}")
    _check_same(view, what, dtype, numel)
    return holder, view.addr


def _check_same(view: HostView, what: str, dtype: DataType, numel: int) -> None:
    if view.dtype is None or not dtypes.accepts(dtype, view.dtype):
        raise TypeError(f"{what}: dtype {view.dtype} does not match the device tensor's {dtype}")
    n = 1
    for d in view.shape:
        n *= d
    if n != numel:
        raise ValueError(f"{what}: {n} elements, the device tensor has {numel}")
