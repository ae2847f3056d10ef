// HiFloat8 (HiF8, a5): Ascend's 8-bit tapered-precision float. Byte S.ddd...: after the
// sign, a prefix-coded "dot" field says how wide the exponent field is, so numbers near 1
// keep more mantissa bits than large or tiny ones:
//   11 + exp sign + 3 exp bits + 1 mantissa bit      |E| in 8..15
//   10 + exp sign + 2 exp bits + 2 mantissa bits     |E| in 4..7
//   01 + exp sign + 1 exp bit  + 3 mantissa bits     |E| in 2..3
//   001 + exp sign             + 3 mantissa bits     |E| = 1
//   0001                       + 3 mantissa bits     E = 0
//   0000 + 3 bits k (k > 0): the denormal 2^(k - 23)  (2^-22 .. 2^-16)
// The exponent's leading magnitude bit is implied (it is what the dot field says), so it
// is not stored. 0x00 is zero (the only one), 0x80 NaN, S.11.0111.1 (where 1.5 * 2^15
// would be) infinity; the largest finite value is 2^15, the smallest 2^-22.
// Conversions into it round with the tcvt round mode; the hardware's own is ROUND (to
// nearest, ties away from zero). Past 2^15 the nearest value is infinity (as e5m2's).
#pragma once

#include <cstdint>

namespace pto {

constexpr uint8_t kHif8Inf = 0x6F, kHif8NaN = 0x80;

inline float hif8_bits_to_f32(uint8_t b) {
    const uint8_t mag = b & 0x7Fu;
    if (b == kHif8NaN) return __builtin_nanf("");
    const float s = (b & 0x80u) ? -1.0f : 1.0f;
    if (mag == 0) return 0.0f;
    if (mag == kHif8Inf) return s * __builtin_inff();
    int e, mbits;
    uint32_t m;
    bool neg = (mag & 0x10u) != 0;
    switch (mag >> 5) {
        case 3: e = 8 + ((mag >> 1) & 7); m = mag & 1u; mbits = 1; break;
        case 2: e = 4 + ((mag >> 2) & 3); m = mag & 3u; mbits = 2; break;
        case 1: e = 2 + ((mag >> 3) & 1); m = mag & 7u; mbits = 3; break;
        default:
            if (mag & 0x10u) { e = 1; neg = (mag & 0x08u) != 0; }
            else if (mag & 0x08u) { e = 0; neg = false; }
            else return s * float(__builtin_ldexp(1.0, int(mag & 7u) - 23));   // denormal
            m = mag & 7u;
            mbits = 3;
    }
    return s * float(__builtin_ldexp(double((1u << mbits) | m), (neg ? -e : e) - mbits));
}

// mantissa bits kept at unbiased exponent e (normal range -15..15)
inline int hif8_mantissa_bits(int e) {
    const int a = e < 0 ? -e : e;
    return a <= 3 ? 3 : a <= 7 ? 2 : 1;
}

// the code of a positive value HiF8 holds exactly (0, a denormal, a normal; 1.5 * 2^15 gives the
// infinity code)
inline uint8_t hif8_code_of(double v) {
    if (v == 0.0) return 0;
    int e;
    __builtin_frexp(v, &e);
    e -= 1;                                                       // v = 1.m * 2^e
    if (e <= -16) return uint8_t(e + 23);                         // denormal: 2^-22 .. 2^-16
    const int a = e < 0 ? -e : e, mbits = hif8_mantissa_bits(e);
    const uint32_t m = uint32_t(__builtin_ldexp(v, mbits - e)) & ((1u << mbits) - 1u);
    const uint32_t esign = e < 0 ? 0x10u : 0u;
    if (a >= 8) return uint8_t(0x60u | esign | (uint32_t(a & 7) << 1) | m);
    if (a >= 4) return uint8_t(0x40u | esign | (uint32_t(a & 3) << 2) | m);
    if (a >= 2) return uint8_t(0x20u | esign | (uint32_t(a & 1) << 3) | m);
    if (a == 1) return uint8_t(0x10u | (e < 0 ? 0x08u : 0u) | m);
    return uint8_t(0x08u | m);
}

// mode: the pto_sim RoundMode numbering (0 rint, 1 round, 2 floor, 3 ceil, 4 trunc, 5 odd)
inline uint8_t f32_to_hif8_bits(float f, int mode) {
    if (f != f) return kHif8NaN;
    const bool negative = f < 0;
    const uint8_t sign = negative ? 0x80u : 0u;
    const double a = negative ? -double(f) : double(f);
    if (a == 0.0) return 0;
    if (a > 3.4e38) return uint8_t(sign | kHif8Inf);
    // the two HiF8 codes around a: lo <= a < hi (49152, where the infinity code sits, is its value)
    int e;
    __builtin_frexp(a, &e);
    e -= 1;
    double lo, hi;
    if (a >= 49152.0) {                       // past the infinity code's place, 1.5 * 2^15
        lo = 32768.0;
        hi = 49152.0;
    } else if (e < -22) {
        lo = 0.0;
        hi = __builtin_ldexp(1.0, -22);
    } else {
        const double step = __builtin_ldexp(1.0, e <= -16 ? e : e - hif8_mantissa_bits(e));
        lo = __builtin_floor(a / step) * step;
        hi = lo + step;
        if (lo == a) return uint8_t(sign | hif8_code_of(a));
    }
    const uint8_t clo = hif8_code_of(lo), chi = hif8_code_of(hi);
    const bool up_magnitude = negative ? mode == 2 : mode == 3;      // floor / ceil, by sign
    const bool down_magnitude = negative ? mode == 3 : mode == 2;
    uint8_t code;
    if (mode == 4 || down_magnitude) code = clo;
    else if (up_magnitude) code = chi;
    else if (mode == 5) code = (chi & 1u) && chi != kHif8Inf ? chi : clo;   // to odd (short of infinity)
    else if (a - lo != hi - a) code = a - lo < hi - a ? clo : chi;
    else code = mode == 1 ? chi : ((clo & 1u) == 0 ? clo : chi);     // ties: away, or to the even code
    return uint8_t(code == 0 ? 0 : (sign | code));
}

struct hif8 {
    uint8_t bits;
    hif8() = default;
    hif8(float f, int mode) : bits(f32_to_hif8_bits(f, mode)) {}
    explicit hif8(float f) : bits(f32_to_hif8_bits(f, 1)) {}
    operator float() const { return hif8_bits_to_f32(bits); }
};

}  // namespace pto
