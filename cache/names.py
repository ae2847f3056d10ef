"""Digests, keys and their validation.

Every name that becomes part of a path goes through `check_digest`/`check_key`,
so a caller can never make the store read or write outside its root.
"""
from __future__ import annotations

import re

import xxhash


class CacheError(Exception):
    """Misuse of the store: a bad key/digest or a manifest that cannot be published."""


DIGEST_LEN = 32  # xxh3_128 hexdigest
_DIGEST_RE = re.compile(r"[0-9a-f]{32}")
# Keys come from callers' own hashing; allow any lowercase hex long enough to shard.
_KEY_RE = re.compile(r"[0-9a-f]{2,128}")


def digest_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def new_hasher():
    return xxhash.xxh3_128()


def is_digest(name) -> bool:
    return isinstance(name, str) and _DIGEST_RE.fullmatch(name) is not None


def is_key(name) -> bool:
    return isinstance(name, str) and _KEY_RE.fullmatch(name) is not None


def check_digest(digest) -> str:
    if not is_digest(digest):
        raise CacheError(f"not an object digest: {digest!r}")
    return digest


def check_key(key) -> str:
    if not is_key(key):
        raise CacheError(f"not an action key (lowercase hex, 2-128 chars): {key!r}")
    return key


def check_manifest(manifest) -> dict:
    """A manifest is a JSON object whose "outputs" maps names to object digests."""
    if not isinstance(manifest, dict):
        raise CacheError("manifest must be a dict")
    outputs = manifest.get("outputs")
    if not isinstance(outputs, dict):
        raise CacheError('manifest["outputs"] must be a dict name -> digest')
    for name, digest in outputs.items():
        if not isinstance(name, str):
            raise CacheError(f"output name must be a str: {name!r}")
        check_digest(digest)
    return manifest


def named_digests(value) -> set[str]:
    """Every object digest a manifest names anywhere (a manifest may name objects
    beyond its outputs, e.g. a report kept with the entry)."""
    out: set[str] = set()
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
        elif is_digest(v):
            out.add(v)
    return out
