"""The system C++ compiler that builds kernels and host code for the simulator, and
what identifies it in build keys. Light on purpose: build keys are computed in every
process, most of which never compile anything."""
from __future__ import annotations

import functools
import os

DEFAULT_CXX = "g++"


def find_compiler(cxx: str | None = None) -> str | None:
    """The compiler's real file, or None if it is not on PATH (what shutil.which finds,
    without importing shutil and its compression modules into every compile)."""
    name = cxx or DEFAULT_CXX
    dirs = [""] if os.path.dirname(name) else os.environ.get("PATH", os.defpath).split(os.pathsep)
    for d in dirs:
        path = os.path.join(d, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.realpath(path)
    return None


@functools.lru_cache(maxsize=None)
def compiler_id(path: str) -> str:
    """Its file and the version it reports (runs it: tens of ms)."""
    import subprocess
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    return f"compiler: {path}\nversion: {version.strip()}"
