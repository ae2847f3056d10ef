"""CLI: python -m pypto.ptoas in.pto -o out.cpp --pto-arch a3|a5 --pto-level level2|level3"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import LEVELS, PtoasError, compile_pto


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pypto.ptoas", description="PTO assembler: .pto -> C++")
    ap.add_argument("input", help=".pto file")
    ap.add_argument("-o", "--output", required=True, help="C++ file to write")
    ap.add_argument("--pto-arch", default="a3", choices=["a3", "a2a3", "a5"])
    ap.add_argument("--pto-level", default="level2", choices=list(LEVELS))
    ap.add_argument("--dump-dir", help="write ptoas's IR after each pass here")
    args = ap.parse_args(argv)
    src = Path(args.input)
    try:
        text = src.read_text()
    except OSError as e:
        print(f"ptoas: cannot read {src}: {e.strerror}", file=sys.stderr)
        return 1
    try:
        result = compile_pto(text, arch=args.pto_arch, level=args.pto_level,
                             dump_passes=bool(args.dump_dir), source_name=src.name)
    except PtoasError as e:
        print(e, file=sys.stderr)
        return 1
    Path(args.output).write_text(result.cpp)
    if args.dump_dir:
        out = Path(args.dump_dir)
        out.mkdir(parents=True, exist_ok=True)
        for name, text in result.pass_dumps.items():
            (out / f"{name}.{'cpp' if name.endswith('emit') else 'pto'}").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
