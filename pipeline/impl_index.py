"""The implementation digests of an installed tree, computed once and kept on disk.

Computing a stage's closure parses every module it reaches (~0.15 s for the whole
tree); a process that only needs the keys (a compile served from the store) must not
pay that. The index, per tree, is a small JSON file with every file's stat signature
and the digests of the stages, and beside it (`.facts.json`) every file's facts (digest,
imports) under its signature, read only when a digest must be computed again. A process
stats the files and folders listed: all unchanged, the stage digests are used as they
are (the facts file is not even parsed); a changed file is re-read (the rest keep their facts);
a changed folder (a file added, removed or renamed: imports may resolve elsewhere)
or file drops the stage digests, which are recomputed from the facts.

A file modified within the last `RACY_NS` is not recorded (the same size and mtime
could still name other bytes after a quick second edit); its stages are not either.
An unreadable or unwritable index is silently replaced by an in-memory one.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import xxhash

from typing import TYPE_CHECKING

if TYPE_CHECKING:     # the closure walker is imported only when a file must be read
    from pypto_pipeline.closure import Facts

VERSION = 2
RACY_NS = 2_000_000_000


def default_dir() -> Path:
    """$PYPTO_IMPL_INDEX_DIR, else pypto-impl/ in the user's cache folder, next to the
    default store (not inside $PYPTO_CACHE_DIR: one index per tree serves every store)."""
    if os.environ.get("PYPTO_IMPL_INDEX_DIR"):
        return Path(os.environ["PYPTO_IMPL_INDEX_DIR"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg).expanduser() if os.path.isabs(os.path.expanduser(xdg)) \
        else Path.home() / ".cache"
    return base / "pypto-impl"


def _sig(st: os.stat_result) -> list[int]:
    # ctime and inode too: a tool that restores an mtime (rsync -t) still changes ctime
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class ImplIndex:
    """Facts source for `closure.Tree`, plus the stage digests, validated by stat."""

    def __init__(self, packages: dict[str, Path], folder: Path | None = None, code: str = ""):
        """`code` names the code that computes facts and digests: an index written by
        other code (another scanner, other stage roots) is not used."""
        self.packages = {k: str(Path(v)) for k, v in sorted(packages.items())}
        self.code = code
        name = xxhash.xxh3_64_hexdigest(json.dumps(self.packages, sort_keys=True).encode())
        self.path = Path(folder if folder is not None else default_dir()) / f"{name}.json"
        self._content = None               # closure.ContentFacts, made when first needed
        self._files: dict[str, dict] | None = None    # facts, read when first needed
        self._ok: dict[str, list] = {}     # files whose signature matched at load
        self.stages: dict[str, str] = {}
        self.extra: dict[str, object] = {}    # other cached facts (the compiler's identity)
        self.dirty = False
        self._load()

    # -- on disk
    @property
    def facts_path(self) -> Path:
        return self.path.with_name(self.path.stem + ".facts.json")

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_bytes())
            if data.get("version") != VERSION or data.get("packages") != self.packages \
                    or data.get("code") != self.code:
                self.dirty = True
                return
            sigs, dirs = data["sigs"], data["dirs"]
            stages, extra = data["stages"], data["extra"]
        except (OSError, ValueError, KeyError, TypeError):
            return
        fresh = True
        for d, sig in dirs.items():
            try:
                if _sig(os.stat(d)) != sig:
                    fresh = False
            except OSError:
                fresh = False
        for f, sig in sigs.items():
            try:
                if _sig(os.stat(f)) == sig:
                    self._ok[f] = sig
                    continue
            except OSError:
                pass
            fresh = False
        self.stages = stages if fresh else {}
        self.extra = extra
        self.dirty = not fresh

    @property
    def files(self) -> dict[str, dict]:
        """Every file's facts under the signature it had when they were read: those of the
        facts file whose signature still holds (read on first use)."""
        if self._files is None:
            self._files = {}
            try:
                facts = json.loads(self.facts_path.read_bytes())
                self._files = {f: e for f, e in facts.items() if self._ok.get(f) == e.get("sig")}
            except (OSError, ValueError, AttributeError):
                pass
        return self._files

    def save(self) -> None:
        """Write the facts, then the index (temp file + rename each); silently nothing if
        they cannot be written."""
        if not self.dirty:
            return
        now = time.time_ns()
        files = {f: e for f, e in self.files.items() if e["sig"][1] < now - RACY_NS}
        stages = self.stages if len(files) == len(self.files) else {}
        data = {"version": VERSION, "packages": self.packages, "code": self.code,
                "dirs": self._dirs(), "sigs": {f: e["sig"] for f, e in files.items()},
                "stages": stages, "extra": self.extra}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            for path, body in ((self.facts_path, files), (self.path, data)):
                tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                tmp.write_text(json.dumps(body, separators=(",", ":")))
                os.replace(tmp, path)
            self.dirty = False
        except OSError:
            pass

    def _dirs(self) -> dict[str, list[int]]:
        out = {}
        for folder in self.packages.values():
            for d, subdirs, _ in os.walk(folder):
                subdirs[:] = [s for s in subdirs if s != "__pycache__"]
                try:
                    out[d] = _sig(os.stat(d))
                except OSError:
                    pass
        return out

    # -- facts, as closure.Tree asks for them
    def facts(self, path: Path, module: str | None) -> Facts:
        key = str(path)
        entry = self.files.get(key)
        if entry is None or entry["module"] != module:
            st = os.stat(path)           # before reading: a later edit changes the signature
            if self._content is None:
                from pypto_pipeline.closure import ContentFacts
                self._content = ContentFacts()
            f = self._content.facts(path, module)
            entry = {"sig": _sig(st), "module": module, "digest": f.digest,
                     "imports": list(f.imports), "dynamic": list(f.dynamic)}
            self.files[key] = entry
            self.dirty = True
        from pypto_pipeline.closure import Facts
        return Facts(entry["digest"], tuple(entry["imports"]), tuple(entry["dynamic"]))

    # -- stage digests
    def stage(self, key: str) -> str | None:
        return self.stages.get(key)

    def set_stage(self, key: str, digest: str) -> None:
        self.stages[key] = digest
        self.dirty = True
