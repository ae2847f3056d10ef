"""Build the generated host orchestration into a shared object the runtime loads
(same discipline as kernel builds: equal C++ gives byte-identical objects)."""
from __future__ import annotations

from pypto.cxx import INCLUDE_DIR, compile_shared

HOST_FLAGS = ("-std=c++17", "-O1", "-fPIC", "-shared")


def build_host(cpp: str, cxx: str | None = None) -> bytes:
    return compile_shared(cpp, [*HOST_FLAGS, "-I", str(INCLUDE_DIR)], "orchestration", cxx)
