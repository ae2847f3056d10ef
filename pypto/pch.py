"""A precompiled tile library for kernel builds: GCC parses pto_sim.hpp (about 0.3 s of a
0.7 s kernel build) once per compiler, flag set and header version, and every later kernel
build loads the parsed form.

Only the build gets faster: GCC gives byte-identical objects with or without the PCH, so
build keys ignore it. It lives outside the content store, in a machine-local directory
($PYPTO_PCH_DIR, else <XDG_CACHE_HOME or ~/.cache>/pypto-pch) shared by every store and
process, one subdirectory per key, published by an atomic rename. PYPTO_PCH=0 turns it
off. Anything that goes wrong here (not GCC, an unwritable directory, a failed build)
leaves the kernel built from the header text, as before.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

HEADER = "pto_sim.hpp"
KEEP = 16            # key directories kept; older ones (other header versions) are pruned
_known: dict[str, str | None] = {}   # key -> directory (None: this key cannot be built)


def root() -> Path:
    env = os.environ.get("PYPTO_PCH_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "pypto-pch"


def include_args(compiler: str, toolchain: str, include_dir: Path, args: list[str]) -> list[str]:
    """`-I <dir>` naming a directory whose HEADER.gch was built with `args`, to go before
    them; [] when there is none to be had. `toolchain` identifies compiler and headers."""
    if os.environ.get("PYPTO_PCH", "1") == "0" or "Free Software Foundation" not in toolchain:
        return []
    import xxhash
    key = xxhash.xxh3_128_hexdigest("\0".join([toolchain, *args]).encode())
    if key not in _known:
        _known[key] = _find_or_build(key, compiler, include_dir, args)
    found = _known[key]
    return ["-I", found] if found else []


def _find_or_build(key: str, compiler: str, include_dir: Path, args: list[str]) -> str | None:
    def command(tmp: Path) -> list[str]:
        return [compiler, *(a for a in args if a != "-shared"), "-x", "c++-header",
                str(include_dir / HEADER), "-o", str(tmp / (HEADER + ".gch"))]
    found = built_once(key, HEADER + ".gch", command)
    return str(found.parent) if found else None


def built_once(key: str, product: str, command) -> Path | None:
    """<root>/<key>/<product>, made by the command(tmp_dir) on its first request on this
    machine (in a hidden directory, published by an atomic rename); None when it fails."""
    home = root()
    final = home / key
    if (final / product).is_file():
        return final / product
    try:
        home.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=home))
    except OSError:
        return None
    try:
        if subprocess.run(command(tmp), capture_output=True, timeout=300).returncode != 0:
            return None
        try:
            os.rename(tmp, final)         # atomic; another process may have won the race
        except OSError:
            pass
        _prune(home, keep=final)
        return final / product if (final / product).is_file() else None
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _prune(home: Path, keep: Path) -> None:
    """Drop the least recently built key directories beyond KEEP (each is tens of MB), and
    what a killed build left (hidden directories older than an hour)."""
    import time
    try:
        for d in home.iterdir():
            if d.name.startswith(".") and d.stat().st_mtime < time.time() - 3600:
                shutil.rmtree(d, ignore_errors=True)
        dirs = [d for d in home.iterdir() if d.is_dir() and not d.name.startswith(".") and d != keep]
        dirs.sort(key=lambda d: d.stat().st_mtime, reverse=True)
        for d in dirs[KEEP - 1:]:
            shutil.rmtree(d, ignore_errors=True)
    except OSError:
        pass
