"""The values of a generated host orchestration: C types of the IR's scalars, C spellings
of constants and of the runtime's scalar bit patterns, and the C++ helpers every
orchestration starts with (PRELUDE)."""
from __future__ import annotations

import math

from pypto import dtype as dt
from pypto.ir.nodes import Const

_C_TYPE = {"FP32": "float", "FP16": "float", "BF16": "float", "INT8": "int8_t",
           "INT16": "int16_t", "INT32": "int32_t", "INT64": "int64_t", "UINT8": "uint8_t",
           "UINT16": "uint16_t", "UINT32": "uint32_t", "UINT64": "uint64_t",
           "BOOL": "bool", "INDEX": "int64_t", "TASK_ID": "int64_t"}


class _Val:
    """A value in the generated C++: an expression and its IR type."""

    def __init__(self, expr: str, type_, *, tuple_of=None, unknown: str | None = None):
        self.expr = expr
        self.type = type_
        self.tuple_of = tuple_of   # for multi-result calls: list of handles
        self.unknown = unknown     # why the value cannot be used (reported at a use)


def _loc(span) -> str:
    return f"{span.file}:{span.line}" if span is not None else "<unknown>"


def _c_float(v: float) -> str:
    if math.isnan(v):
        return "__builtin_nanf(\"\")"
    if math.isinf(v):
        return "__builtin_inff()" if v > 0 else "(-__builtin_inff())"
    text = repr(float(v))
    return f"{text}f"


def _c_int(v: int) -> str:
    if -(1 << 31) < v < (1 << 31):
        return str(v)
    if v == -(1 << 63):
        return "INT64_MIN"
    return f"INT64_C({v})"


def _cast(ct: str, expr: str, e) -> str:
    return expr if isinstance(e, Const) and not e.dtype.is_float else f"({ct})({expr})"


def _decode(d: dt.DataType, src: str) -> str:
    if d.name == "FP32":
        return f"pypto_f32_from_bits({src})"
    if d.name == "FP16":
        return f"pypto_f32_from_f16({src})"
    if d.name == "BF16":
        return f"pypto_f32_from_bf16({src})"
    if d.name == "BOOL":
        return f"{src} != 0"
    if d.name.startswith("UINT"):
        return f"({_C_TYPE[d.name]}){src}"
    if d.name in ("INT64", "INDEX"):
        return f"(int64_t){src}"
    return f"({_C_TYPE[d.name]})(int64_t){src}"


PRELUDE = r"""
namespace {

// Scalar bit patterns (the runtime's convention): fp32 in the low 32 bits, fp16/bf16 in
// the low 16, integers sign-extended to 64 bits, bool 0/1.
inline uint64_t pypto_bits_f32(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

inline float pypto_f32_from_bits(uint64_t b) {
    uint32_t u = (uint32_t)b;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

inline uint64_t pypto_bits_bf16(float v) {
    uint32_t u = (uint32_t)pypto_bits_f32(v);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu)) return 0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (u >> 16) & 0xFFFFu;
}

inline float pypto_f32_from_bf16(uint64_t b) {
    return pypto_f32_from_bits(((uint32_t)b & 0xFFFFu) << 16);
}

inline uint64_t pypto_bits_f16(float v) {
    uint32_t u = (uint32_t)pypto_bits_f32(v);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7FFFFFFFu;
    if (mag >= 0x7F800000u) return sign | (mag > 0x7F800000u ? 0x7E00u : 0x7C00u);
    if (mag >= 0x477FF000u) return sign | 0x7C00u;            // rounds past 65504: inf
    if (mag < 0x38800000u) {                                   // subnormal or zero in fp16
        if (mag < 0x33000000u) return sign;                    // below half the smallest
        uint32_t exp = mag >> 23;
        uint32_t man = (mag & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - exp;                           // 14..24
        uint32_t h = man >> shift;
        uint32_t rem = man & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return sign | h;
    }
    uint32_t h = ((mag - 0x38000000u) >> 13);
    uint32_t rem = mag & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return sign | h;
}

inline float pypto_f32_from_f16(uint64_t b) {
    uint32_t h = (uint32_t)b & 0xFFFFu;
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    uint32_t u;
    if (exp == 0x1Fu) {
        u = sign | 0x7F800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {                                                   // subnormal: normalise
        exp = 113u;
        while (!(man & 0x400u)) { man <<= 1; --exp; }
        u = sign | (exp << 23) | ((man & 0x3FFu) << 13);
    }
    return pypto_f32_from_bits(u);
}

inline uint64_t pypto_bits_int(int64_t v) { return (uint64_t)v; }

template <typename T> inline T pypto_min(T a, T b) { return b < a ? b : a; }
template <typename T> inline T pypto_max(T a, T b) { return a < b ? b : a; }

// Python's // and % on integers (floor division).
inline int64_t pypto_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

inline int64_t pypto_floormod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

// Close `open_scopes` runtime scopes, then return `code`.
inline int32_t pypto_leave(const PyptoRuntimeApi* api, int open_scopes, int32_t code) {
    for (int i = 0; i < open_scopes; ++i) api->scope_end(api->ctx);
    return code;
}

}  // namespace
"""
