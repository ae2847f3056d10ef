"""Builds with the system C++ compiler: generated C++ -> shared object bytes, for the
kernels (against the tile library in include/) and the host orchestration.

Outside pypto.ptoas on purpose: a kernel build's key covers this module's import
closure, which must not hold the assembler that wrote the C++ (an edit there that
leaves the C++ unchanged keeps every kernel build cached).

Builds run in a fresh temporary directory with fixed relative file names and no debug
info, so the same C++ and toolchain give byte-identical objects (cacheable by content).
"""
from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from pypto.toolchain import DEFAULT_CXX, compiler_id

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
EXTERNAL_INCLUDE_DIR = INCLUDE_DIR / "external"   # what hand-written kernels include
# -O3 vectorises the tile library's row loops; -fno-math-errno lets sqrt be one instruction
# (errno is never read) and -fno-trapping-math lets a loop with a select vectorise (no FP
# exception is ever unmasked). No -march: the bytes must not depend on the building machine, and
# no -ffast-math: results stay those of IEEE arithmetic in program order. -ffp-contract=off: GCC
# would otherwise fuse a*b+c into one FMA in the AVX-512 clones only, and a result would depend
# on the machine that runs it.
BASE_FLAGS = ("-std=c++17", "-O3", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off", "-fPIC",
              "-shared")
CORE_DEFINES = {"aiv": "-D__DAV_VEC__", "vector": "-D__DAV_VEC__",
                "aic": "-D__DAV_CUBE__", "cube": "-D__DAV_CUBE__",
                "mix": "-D__DAV_MIX__"}     # a Group: its cube and vector halves in one .so
TIMEOUT_S = 300


class KernelBuildError(RuntimeError):
    """The kernel did not build: compiler missing, or its diagnostics (in .stderr)."""

    def __init__(self, message: str, stderr: str = ""):
        self.stderr = stderr
        super().__init__(message + (f"\n{stderr}" if stderr else ""))


def _resolve(cxx: str | None) -> str:
    name = cxx or DEFAULT_CXX
    path = shutil.which(name)
    if path is None:
        raise KernelBuildError(f"C++ compiler '{name}' not found on PATH: kernels for the simulator "
                               "are built with the system compiler (install g++, e.g. "
                               "`apt-get install g++`, or pass cxx=...)")
    return path


def flags(arch: str, core_type: str) -> list[str]:
    if core_type not in CORE_DEFINES:
        raise ValueError(f"unknown core_type '{core_type}': use aiv or aic")
    if arch not in ("a2a3", "a3", "a2", "a5"):
        raise ValueError(f"unknown arch '{arch}': use a2a3 or a5")
    out = list(BASE_FLAGS) + ["-I", str(INCLUDE_DIR)]
    if arch == "a5":
        out.append("-DPTO_ARCH_A5")
    out.append(CORE_DEFINES[core_type])
    return out


def build_kernel(cpp: str, *, arch: str, core_type: str, cxx: str | None = None) -> bytes:
    """Compile one kernel's C++ and return the shared object's bytes (the tile library
    precompiled when the compiler can: the same bytes, sooner)."""
    from pypto import pch
    args = flags(arch, core_type)
    args = pch.include_args(_resolve(cxx), toolchain_id(cxx), INCLUDE_DIR, args) + args
    return compile_shared(cpp, args, "kernel", cxx)


def compile_shared(cpp: str, args, stem: str, cxx: str | None = None) -> bytes:
    """C++ source -> shared object bytes, built in a fresh temp dir under the fixed
    names <stem>.cpp / <stem>.so (so the bytes depend only on the source)."""
    return build_with_files(cpp, {}, args, stem, cxx)


def build_with_files(cpp: str, files: dict[str, bytes], args, stem: str, cxx: str | None = None) -> bytes:
    """compile_shared with more files beside <stem>.cpp: `files` maps paths under src/
    (relative, as the sources include one another) to their bytes."""
    compiler = _resolve(cxx)
    cmd = [compiler, *args, f"{stem}.cpp", "-o", f"{stem}.so"]
    with tempfile.TemporaryDirectory(prefix=f"pypto_{stem}_") as tmp:
        for rel, data in files.items():
            dst = Path(tmp, "src", rel)
            if Path(tmp, "src") not in dst.resolve().parents:
                raise KernelBuildError(f"source path {rel!r} leaves the build directory")
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(data)
        Path(tmp, f"{stem}.cpp").write_text(cpp)
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KernelBuildError(f"{Path(compiler).name} took longer than {TIMEOUT_S} s") from None
        if proc.returncode != 0:
            raise KernelBuildError(f"{Path(compiler).name} failed to build the {stem} "
                                   f"(exit {proc.returncode})", proc.stderr)
        return Path(tmp, f"{stem}.so").read_bytes()


@functools.lru_cache(maxsize=None)
def toolchain_id(cxx: str | None = None) -> str:
    """Identifies everything besides the C++ text that decides the built bytes."""
    compiler = _resolve(cxx)
    digest = hashlib.sha256()
    for p in sorted(INCLUDE_DIR.glob("*.h*")):
        digest.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return "\n".join([
        compiler_id(os.path.realpath(compiler)),
        f"flags: {' '.join(BASE_FLAGS)} -I <include> [-DPTO_ARCH_A5] -D__DAV_VEC__|-D__DAV_CUBE__",
        f"headers: {digest.hexdigest()}",
    ])
