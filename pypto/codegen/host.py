"""Build the generated host orchestration into a shared object the runtime loads.

Same discipline as kernel builds: a fresh temp dir, fixed relative names, no debug
info, so equal C++ gives byte-identical objects.
"""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from pypto.ptoas.build import INCLUDE_DIR, TIMEOUT_S, KernelBuildError, _resolve

HOST_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared")


def build_host(cpp: str, cxx: str | None = None) -> bytes:
    compiler = _resolve(cxx)
    cmd = [compiler, *HOST_FLAGS, "-I", str(INCLUDE_DIR), "orch.cpp", "-o", "orch.so"]
    with tempfile.TemporaryDirectory(prefix="pypto_orch_") as tmp:
        Path(tmp, "orch.cpp").write_text(cpp)
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise KernelBuildError(f"{Path(compiler).name} took longer than {TIMEOUT_S} s") from None
        if proc.returncode != 0:
            raise KernelBuildError(f"{Path(compiler).name} failed to build the orchestration "
                                   f"(exit {proc.returncode})", proc.stderr)
        return Path(tmp, "orch.so").read_bytes()
