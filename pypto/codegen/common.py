"""Small helpers shared by the code generators: unique names, spans, literals."""
from __future__ import annotations

import math
import re
import struct

from pypto.errors import CodegenError, Span


class Names:
    """Hands out unique identifiers, each derived from a hint."""

    def __init__(self, reserved=()):
        self.used: set[str] = set(reserved)

    def fresh(self, hint: str) -> str:
        name, k = hint, 0
        while name in self.used:
            k += 1
            name = f"{hint}_{k}"
        self.used.add(name)
        return name


def span_text(span: Span | None) -> str:
    return str(span) if span is not None else "<unknown location>"


def fail(msg: str, span: Span | None, hint: str | None = None):
    raise CodegenError(msg, span, hint)


def c_string(text: str) -> str:
    """A double-quoted literal valid in both MLIR and C: backslash and quote escaped,
    control and non-ASCII characters as escapes."""
    out = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif 32 <= ord(ch) < 127:
            out.append(ch)
        else:
            out.append("".join(f"\\{b:02X}" for b in ch.encode("utf-8")))
    return '"' + "".join(out) + '"'


_FLOAT_BITS = {"f32": ("<f", "<I", 8), "f16": ("<e", "<H", 4)}


def float_bits(value: float, mlir_type: str) -> int:
    """The IEEE bit pattern of `value` in the float type (bf16: round to nearest even)."""
    if mlir_type == "bf16":
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        if math.isnan(value):
            return 0x7FC0
        bits += 0x7FFF + ((bits >> 16) & 1)
        return (bits >> 16) & 0xFFFF
    fmt, ifmt, _ = _FLOAT_BITS[mlir_type]
    return struct.unpack(ifmt, struct.pack(fmt, value))[0]


_DECIMAL = re.compile(r"^-?\d+\.\d*(e[-+]?\d+)?$")


def mlir_float(value: float, mlir_type: str) -> str:
    """An MLIR float literal: decimal with a dot when finite (exact for f32 and wider),
    else the hex bit pattern MLIR accepts for floats."""
    value = float(value)
    if mlir_type == "f32" and math.isfinite(value):
        # round to f32 first so the text is exactly the stored value
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    if math.isfinite(value) and mlir_type in ("f32", "f64"):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mant, exp = text.split("e")
            text = f"{mant}.0e{exp}"
        if _DECIMAL.match(text):
            return text
    width = {"f32": 8, "f16": 4, "bf16": 4}.get(mlir_type)
    if width is None:
        raise ValueError(f"no float literal for type {mlir_type}")
    return f"0x{float_bits(value, mlir_type):0{width}X}"


_MASK64 = (1 << 64) - 1


def scalar_bits(value, dtype) -> int:
    """The uint64 bit pattern a scalar of `dtype` travels as (the runtime's convention):
    fp32 in the low 32 bits, fp16/bf16 in the low 16, integers two's complement
    sign-extended to 64 bits (unsigned ones zero-extended), bool 0/1."""
    if dtype.is_float:
        return float_bits(float(value), {"FP32": "f32", "FP16": "f16", "BF16": "bf16"}[dtype.name])
    if dtype.name == "BOOL":
        return 1 if value else 0
    v = int(value)
    bits = 8 * dtype.nbytes
    if dtype.name.startswith("UINT"):
        return v & ((1 << bits) - 1)
    v &= (1 << bits) - 1
    if v >> (bits - 1):
        v -= 1 << bits
    return v & _MASK64


def safe_file_name(name: str) -> str:
    """A function name as a file name (same rule as the build driver)."""
    return "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in name)
