"""python -m pypto_cache [--root DIR] {stats,gc,clear}"""
from __future__ import annotations

import argparse
import os
import re
import sys

from . import Store, default_root
from .gc import DEFAULT_GRACE

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """'500M', '2G', '1024K', '1.5G', '4096' -> bytes (binary units; a trailing B/iB is allowed)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 500M, 2G, 1024K)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _remote_line() -> str:
    """What $PYPTO_REMOTE_CACHE names (without its password), not asked anything."""
    from .remote import redact, settings
    cfg = settings()
    if cfg is None:
        return "off" if os.environ.get("PYPTO_REMOTE_CACHE") else "none (PYPTO_REMOTE_CACHE unset)"
    signed = ", signed" if cfg["secret"] else ""
    return f"{redact(cfg['url'])} ({cfg['mode']}{signed})"


def main(argv=None) -> int:
    root_help = "store root (default: $PYPTO_CACHE_DIR, else ~/.cache/pypto)"
    ap = argparse.ArgumentParser(prog="python -m pypto_cache",
                                 description="Inspect or trim the pypto build cache.")
    ap.add_argument("--root", help=root_help)
    # --root is accepted after the subcommand too; SUPPRESS keeps an absent one
    # from overwriting a --root given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", default=argparse.SUPPRESS, help=root_help)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("stats", parents=[common],
                   help="print object/action counts, size, hits and misses (local and remote)")
    g = sub.add_parser("gc", parents=[common],
                       help="evict least-recently-used entries down to a size")
    g.add_argument("--max-size", type=parse_size, required=True, help="e.g. 500M, 2G, 1024K, 4096")
    g.add_argument("--grace", type=float, default=DEFAULT_GRACE,
                   help=f"keep anything used in the last SECONDS (default {DEFAULT_GRACE:g})")
    sub.add_parser("clear", parents=[common], help="remove every object and action")
    args = ap.parse_args(argv)

    # The CLI always inspects the disk store, even with PYPTO_CACHE_DISABLE=1.
    store = Store(args.root if args.root else default_root())
    try:
        return _command(store, args)
    except BrokenPipeError:    # `... | head`: the reader left
        return 1
    except OSError as e:       # e.g. gc or clear on a read-only store: say so, no traceback
        print(f"python -m pypto_cache {args.cmd}: {store.root}: {e.strerror or e}",
              file=sys.stderr)
        return 1


def _command(store: Store, args) -> int:
    if args.cmd == "stats":
        s = store.stats()
        print(f"root     {s['root']}")
        print(f"objects  {s['objects']}")
        print(f"actions  {s['actions']}")
        print(f"bytes    {s['bytes']} ({_human(s['bytes'])})")
        print(f"hits     {s['hits']}")
        print(f"misses   {s['misses']}")
        print(f"remote   {_remote_line()}")
        print(f"remote hits        {s['remote_hits']}")
        print(f"remote misses      {s['remote_misses']}")
        print(f"remote bytes up    {s['remote_bytes_up']} ({_human(s['remote_bytes_up'])})")
        print(f"remote bytes down  {s['remote_bytes_down']} ({_human(s['remote_bytes_down'])})")
        print(f"remote errors      {s['remote_errors']}")
        print(f"remote refused     {s['remote_rejected']}")
    elif args.cmd == "gc":
        r = store.gc(args.max_size, grace=args.grace)
        print(f"removed {len(r['actions'])} actions, {len(r['objects'])} objects, "
              f"{r['freed']} bytes; {r['bytes']} bytes left")
    elif args.cmd == "clear":
        store.clear()
        print(f"cleared {store.root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
