"""Reading an output directory: kernel_config.py, compiled_meta.json and the binaries.

kernel_config.py is parsed with ast and each assignment is read with
ast.literal_eval; it is never executed. A binary is loaded only from the exact bytes
whose xxh3_128 digest matched the one the compiler recorded.
"""
from __future__ import annotations

import ast

from pypto import pyast
import itertools
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ArtifactError, DigestMismatchError

KERNEL_CONFIG = "kernel_config.py"
COMPILED_META = "compiled_meta.json"
_CONFIG_NAMES = ("RUNTIME_CONFIG", "ORCHESTRATION", "KERNELS")
CORE_TYPES = ("aic", "aiv", "mix")     # mix: a Group, its halves on an AIC and an AIV


def read_kernel_config(path: Path) -> dict[str, Any]:
    """The literal assignments of kernel_config.py, by name."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ArtifactError(f"cannot read {path}: {e}") from e
    try:
        tree = pyast.parse(text, filename=str(path))
    except SyntaxError as e:
        raise ArtifactError(f"{path} is not valid Python: {e}") from e
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id in _CONFIG_NAMES:
            name = node.targets[0].id
            try:
                found[name] = ast.literal_eval(node.value)
            except ValueError as e:
                raise ArtifactError(
                    f"{path}:{node.lineno}: {name} must be a literal (dicts, lists, strings, "
                    f"numbers); it is not: {e}") from e
    missing = [n for n in _CONFIG_NAMES if n not in found]
    if missing:
        raise ArtifactError(f"{path} does not assign {', '.join(missing)}")
    if not isinstance(found["RUNTIME_CONFIG"], dict):
        raise ArtifactError(f"{path}: RUNTIME_CONFIG must be a dict")
    if not isinstance(found["KERNELS"], list):
        raise ArtifactError(f"{path}: KERNELS must be a list")
    orch = found["ORCHESTRATION"]
    if not (isinstance(orch, dict) or (isinstance(orch, list) and all(isinstance(o, dict) for o in orch))):
        raise ArtifactError(f"{path}: ORCHESTRATION must be a dict (or a list of dicts)")
    return found


def read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = json.loads(Path(path).read_text())
    except OSError as e:
        raise ArtifactError(f"cannot read {path}: {e}") from e
    except json.JSONDecodeError as e:
        raise ArtifactError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(meta, dict) or not isinstance(meta.get("params"), list):
        raise ArtifactError(f"{path} has no 'params' list")
    if meta.get("schema", 1) != 1:
        raise ArtifactError(f"{path}: unsupported schema {meta.get('schema')!r} (this runtime reads 1)")
    return meta


def digest_of(data: bytes) -> str:
    import xxhash
    return xxhash.xxh3_128_hexdigest(data)


def _read_verified(output_dir: Path, rel: str, expected: str | None, what: str) -> tuple[Path, bytes]:
    path = output_dir / rel
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ArtifactError(f"{what}: cannot read {path}: {e}") from e
    if expected is not None:
        actual = digest_of(data)
        if actual.lower() != str(expected).lower():
            raise DigestMismatchError(what, str(path), str(expected), actual)
    return path, data


_LOAD_DIR: list[str] = []
_LOAD_LOCK = threading.Lock()
_LOAD_IDS = itertools.count()


def _load_bytes(data: bytes, label: str) -> "ctypes.CDLL":
    import atexit
    import ctypes
    import shutil
    import tempfile
    """dlopen the given bytes (not the original file, which could change after it was
    verified).

    The bytes go to a file with a name never used before in this process, inside a
    private directory, which is removed right after dlopen. The dynamic loader reuses
    an already-loaded library when the name matches, so names must never repeat (that
    is also why a memfd's recycled /proc/self/fd/N path is not used).
    """
    with _LOAD_LOCK:
        if not _LOAD_DIR or not os.path.isdir(_LOAD_DIR[0]):
            _LOAD_DIR[:] = [tempfile.mkdtemp(prefix=f"pypto-so-{os.getpid()}-")]
            atexit.register(shutil.rmtree, _LOAD_DIR[0], True)
        safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in label)[:80]
        name = os.path.join(_LOAD_DIR[0], f"{os.getpid()}-{next(_LOAD_IDS)}-{safe}.so")
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
    try:
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        try:
            return ctypes.CDLL(name, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        except OSError as e:
            raise OSError(f"{e} (binaries are loaded from a private copy under "
                          f"{_LOAD_DIR[0]}; if that file system is mounted noexec, point TMPDIR "
                          "at one that is not)") from e
    finally:
        os.unlink(name)


def _write_all(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@dataclass
class LoadedKernel:
    func_id: int
    name: str
    core_type: str
    signature: tuple
    path: Path
    digest: str
    entry: Any = field(repr=False)   # ctypes function pypto_kernel_entry
    lib: Any = field(repr=False)
    # how it runs on a core group (abi.CoreGroup); () for a kernel on one core
    group: tuple = field(default=(), repr=False)
    move_ns: Any = field(default=None, repr=False)   # abi.bind_move_ns
    sdma: bool = False               # its blocks get an SDMA workspace (pl.prefetch)
    # abi.core_needs, once: read by every scheduling step
    needs: tuple = field(init=False, repr=False)

    def __post_init__(self):
        from .abi import core_needs    # (loaded with the kernel's library already)
        self.needs = core_needs(self.core_type, self.group)


@dataclass
class LoadedOrchestration:
    name: str
    function_name: str
    signature: tuple
    path: Path
    entry: Any = field(repr=False)
    lib: Any = field(repr=False)


@dataclass
class ChipCallable:
    """The loaded, digest-verified orchestration and kernels of one output directory.
    Immutable once built and shared by every worker that runs the program."""
    output_dir: Path
    orchestration: LoadedOrchestration
    kernels: dict[int, LoadedKernel]
    runtime_config: dict

    def kernel(self, func_id: int) -> LoadedKernel | None:
        return self.kernels.get(func_id)


def kernel_table(output_dir: Path, kernels: list) -> list[dict]:
    """Validate the KERNELS entries (without touching binaries)."""
    seen: set[int] = set()
    for i, k in enumerate(kernels):
        if not isinstance(k, dict):
            raise ArtifactError(f"{output_dir / KERNEL_CONFIG}: KERNELS[{i}] is not a dict")
        for key in ("func_id", "name", "binary", "core_type"):
            if key not in k:
                raise ArtifactError(f"{output_dir / KERNEL_CONFIG}: KERNELS[{i}] has no '{key}'")
        if k["core_type"] not in CORE_TYPES:
            raise ArtifactError(
                f"{output_dir / KERNEL_CONFIG}: kernel '{k['name']}' has core_type "
                f"{k['core_type']!r}; expected one of {', '.join(CORE_TYPES)}")
        if k["func_id"] in seen:
            raise ArtifactError(f"{output_dir / KERNEL_CONFIG}: func_id {k['func_id']} appears twice")
        seen.add(k["func_id"])
    return kernels


def load_chip_callable(output_dir: Path, config: dict[str, Any]) -> ChipCallable:
    from . import abi, comm    # ctypes: only once something is loaded to run
    output_dir = Path(output_dir)
    orch = config["ORCHESTRATION"]
    if isinstance(orch, list):
        if len(orch) != 1:
            raise ArtifactError(
                f"{output_dir}: {len(orch)} orchestrations; this runtime dispatches one per program")
        orch = orch[0]
    kernels: dict[int, LoadedKernel] = {}
    for k in kernel_table(output_dir, config["KERNELS"]):
        digest = k.get("digest")
        if not digest:
            raise ArtifactError(
                f"{output_dir / KERNEL_CONFIG}: kernel '{k['name']}' carries no digest; "
                "refusing to load an unverified kernel")
        path, data = _read_verified(output_dir, k["binary"], digest, f"kernel '{k['name']}'")
        try:
            lib = _load_bytes(data, k["name"])
            comm.give(lib)                  # (a rank of a distributed run: its comm context)
            entry = abi.bind_kernel_entry(lib)
            info = abi.kernel_info(lib)
            group = abi.core_group(lib, str(k["name"]), k["core_type"], info)
        except (OSError, AttributeError) as e:
            raise ArtifactError(f"kernel '{k['name']}': cannot load {path}: {e}") from e
        kernels[int(k["func_id"])] = LoadedKernel(
            int(k["func_id"]), str(k["name"]), k["core_type"], tuple(k.get("signature", ())),
            path, digest, entry, lib, group, abi.bind_move_ns(lib), bool(info.get("sdma")))
    if "binary" not in orch:
        raise ArtifactError(f"{output_dir / KERNEL_CONFIG}: ORCHESTRATION has no 'binary'")
    name = str(orch.get("name", "orchestration"))
    path, data = _read_verified(output_dir, orch["binary"], orch.get("digest"),
                                f"orchestration '{name}'")
    fname = orch.get("function_name", abi.ORCHESTRATION_ENTRY)
    try:
        lib = _load_bytes(data, name)
        entry = abi.bind_orchestration_entry(lib, fname)
    except (OSError, AttributeError) as e:
        raise ArtifactError(f"orchestration '{name}': cannot load {fname} from {path}: {e}") from e
    loaded = LoadedOrchestration(name, fname, tuple(orch.get("signature", ())), path, entry, lib)
    return ChipCallable(output_dir, loaded, kernels, dict(config["RUNTIME_CONFIG"]))
