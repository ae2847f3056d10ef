// pto_sim base: errors, 16-bit float types, numeric conversion, per-core on-chip arenas.
// Part of the header-only tile library that pypto.ptoas emits C++ against (see pto_sim.hpp).
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>

#include "pypto_abi.h"
#include "pto_sim_hif8.hpp"

namespace pto {

// ---------------------------------------------------------------- tiny traits
// Own minimal traits and GCC math builtins instead of <type_traits>/<cmath>: those two
// headers alone doubled the compile time of a kernel.
template <class A, class B> struct is_same { static constexpr bool value = false; };
template <class A> struct is_same<A, A> { static constexpr bool value = true; };
template <class T> struct int_info { static constexpr bool is_int = false, is_signed = false; };
#define PTO_INT_INFO(T, S) \
    template <> struct int_info<T> { static constexpr bool is_int = true, is_signed = S; };
PTO_INT_INFO(int8_t, true) PTO_INT_INFO(int16_t, true) PTO_INT_INFO(int32_t, true) PTO_INT_INFO(int64_t, true)
PTO_INT_INFO(uint8_t, false) PTO_INT_INFO(uint16_t, false) PTO_INT_INFO(uint32_t, false) PTO_INT_INFO(uint64_t, false)
#undef PTO_INT_INFO
template <class T> constexpr bool is_int = int_info<T>::is_int;
template <class T> constexpr bool is_signed_int = int_info<T>::is_signed;
template <bool C, class A, class B> struct pick { using type = A; };
template <class A, class B> struct pick<false, A, B> { using type = B; };

// ---------------------------------------------------------------- errors
// Every check failure throws an Error; the generated kernel entry catches it and copies
// msg into the caller's buffer. `site` is "<loc>: <op>" chosen by the emitter.
struct Error {
    char msg[768];
    const char* what() const { return msg; }
};

// A half of a core group that stops because the other half failed first: the entry
// returns kStopped for it, so the runtime reports the half that failed, not this one.
struct Stopped : Error {};
constexpr int kStopped = 2;

template <class E = Error>
[[noreturn]] inline void fail(const char* site, const char* fmt, ...) {
    E e;
    int n = std::snprintf(e.msg, sizeof e.msg, "%s: error: ", site);
    if (n < 0 || n >= int(sizeof e.msg)) n = 0;
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(e.msg + n, sizeof e.msg - size_t(n), fmt, ap);
    va_end(ap);
    throw e;
}

// ---------------------------------------------------------------- fp16 / bf16
// Conversions are round-to-nearest-even with subnormals, infinities and NaN kept.
inline uint32_t f32_bits(float f) { uint32_t x; std::memcpy(&x, &f, 4); return x; }
inline float f32_from_bits(uint32_t x) { float f; std::memcpy(&f, &x, 4); return f; }
inline double f64_from_bits(uint64_t x) { double d; std::memcpy(&d, &x, 8); return d; }
template <class D, class S> inline D bit_cast(S s) {
    static_assert(sizeof(D) == sizeof(S), "bitcast between types of different size");
    D d;
    std::memcpy(&d, &s, sizeof d);
    return d;
}

inline uint16_t f32_to_f16_bits(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xFFu, man = x & 0x7FFFFFu;
    if (exp == 0xFF) return uint16_t(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    int32_t e = int32_t(exp) - 112;  // rebias 127 -> 15
    if (e >= 31) return uint16_t(sign | 0x7C00u);
    if (e <= 0) {  // half subnormal (or zero)
        if (e < -10) return uint16_t(sign);
        man |= 0x800000u;
        uint32_t shift = uint32_t(14 - e), m = man >> shift, rem = man & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
        return uint16_t(sign | m);
    }
    uint32_t h = sign | (uint32_t(e) << 10) | (man >> 13), rem = man & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may reach inf: correct
    return uint16_t(h);
}

inline float f16_bits_to_f32(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0) {
        if (man == 0) return f32_from_bits(sign);
        int e = -1;
        do { ++e; man <<= 1; } while (!(man & 0x400u));
        return f32_from_bits(sign | (uint32_t(112 - e) << 23) | ((man & 0x3FFu) << 13));
    }
    if (exp == 31) return f32_from_bits(sign | 0x7F800000u | (man << 13));
    return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7FFFu + ((x >> 16) & 1u);
    return uint16_t(x >> 16);
}
inline float bf16_bits_to_f32(uint16_t b) { return f32_from_bits(uint32_t(b) << 16); }

// 2-byte storage types; arithmetic goes through float (implicit widening, explicit narrowing).
struct half {
    uint16_t bits;
    half() = default;
    explicit half(float f) : bits(f32_to_f16_bits(f)) {}
    operator float() const { return f16_bits_to_f32(bits); }
    static half from_bits(uint16_t b) { half h; h.bits = b; return h; }
};
struct bfloat16 {
    uint16_t bits;
    bfloat16() = default;
    explicit bfloat16(float f) : bits(f32_to_bf16_bits(f)) {}
    operator float() const { return bf16_bits_to_f32(bits); }
    static bfloat16 from_bits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
};

// 8-bit floats (a5): stored, moved and converted. Conversions from float round to nearest
// even, as torch's: e4m3fn (bias 7, no infinity) saturates to +-448, e5m2 (bias 15)
// overflows to infinity; e8m0 (an unsigned power of two, 2^(b - 127), 0xFF NaN) rounds a
// mantissa of one half or more up.
inline uint8_t f32_to_fp8_bits(float f, int ebits, int mbits, bool finite_only) {
    const uint8_t sign = (f32_bits(f) >> 24) & 0x80u;
    const int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    const uint32_t max_exp = (1u << ebits) - 1u;                    // the all-ones exponent field
    // largest finite: e4m3fn S.1111.110 (448); e5m2 S.11110.11 (57344); e5m2's all-ones is inf
    const uint32_t top = finite_only ? ((max_exp << mbits) | ((1u << mbits) - 2u))
                                     : (((max_exp - 1u) << mbits) | ((1u << mbits) - 1u));
    const uint32_t inf = max_exp << mbits;
    if (f != f) return uint8_t(sign | (finite_only ? 0x7Fu : (inf | 1u)));
    const double a = f < 0 ? -double(f) : double(f);
    if (a > 3.4e38) return uint8_t(sign | (finite_only ? top : inf));   // infinity
    if (a == 0.0) return sign;
    int e;
    __builtin_frexp(a, &e);
    e -= 1;                                                          // a = 1.m * 2^e
    const bool sub = e < emin;
    const double q = a / __builtin_ldexp(1.0, (sub ? emin : e) - mbits);
    uint32_t m = uint32_t(__builtin_nearbyint(q));                   // round half to even
    uint32_t exp_field = sub ? 0u : uint32_t(e + bias);
    if (m >= (sub ? 1u : 2u) << mbits) { exp_field += 1; m = sub ? m : m >> 1; }   // carried up
    const uint32_t bits = (exp_field << mbits) | (m & ((1u << mbits) - 1u));
    if (bits > top) return uint8_t(sign | (finite_only ? top : inf));
    return uint8_t(sign | bits);
}
inline float fp8_bits_to_f32(uint8_t b, int ebits, int mbits, bool finite_only) {
    const int bias = (1 << (ebits - 1)) - 1;
    const uint32_t e = (b >> mbits) & ((1u << ebits) - 1u), m = b & ((1u << mbits) - 1u);
    const float s = (b & 0x80u) ? -1.0f : 1.0f;
    if (finite_only ? (e == (1u << ebits) - 1u && m == (1u << mbits) - 1u) : (e == (1u << ebits) - 1u))
        return (!finite_only && m == 0) ? s * __builtin_inff() : __builtin_nanf("");
    if (e == 0) return s * float(__builtin_ldexp(double(m), 1 - bias - mbits));
    return s * float(__builtin_ldexp(double((1u << mbits) | m), int(e) - bias - mbits));
}
inline uint8_t f32_to_e8m0_bits(float f) {
    const uint32_t x = f32_bits(f), e = (x >> 23) & 0xFFu, m = x & 0x7FFFFFu;
    if (e == 0xFFu) return 0xFFu;                              // infinity, NaN
    const uint32_t r = e + (m >= 0x400000u ? 1u : 0u);
    return uint8_t(r > 0xFFu ? 0xFFu : r);
}
inline float e8m0_bits_to_f32(uint8_t b) {
    return b == 0xFFu ? __builtin_nanf("") : float(__builtin_ldexp(1.0, int(b) - 127));
}
struct fp8_e4m3fn {
    uint8_t bits;
    fp8_e4m3fn() = default;
    explicit fp8_e4m3fn(float f) : bits(f32_to_fp8_bits(f, 4, 3, true)) {}
    operator float() const { return fp8_bits_to_f32(bits, 4, 3, true); }
};
struct fp8_e5m2 {
    uint8_t bits;
    fp8_e5m2() = default;
    explicit fp8_e5m2(float f) : bits(f32_to_fp8_bits(f, 5, 2, false)) {}
    operator float() const { return fp8_bits_to_f32(bits, 5, 2, false); }
};
struct fp8_e8m0 {
    uint8_t bits;
    fp8_e8m0() = default;
    explicit fp8_e8m0(float f) : bits(f32_to_e8m0_bits(f)) {}
    operator float() const { return e8m0_bits_to_f32(bits); }
};

// FP4 (e2m1, a5): stored as pairs, one byte, the even element in the low nibble. A tile
// of pairs widens into a tile of twice the columns (tcvt); nothing computes with it.
struct fp4x2 {
    uint8_t bits;
};
constexpr float kFp4Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};   // e2m1 magnitudes
inline float fp4_e2m1_to_f32(uint8_t code) {
    const float v = kFp4Values[code & 7u];
    return (code & 8u) ? -v : v;
}
// to the nearest e2m1 value, ties to the even code; beyond 6 (and NaN, which e2m1 has no
// code for) saturates to +-6, as OCP MX conversions do
inline uint8_t f32_to_fp4_e2m1(float f) {
    const uint8_t sign = (f32_bits(f) >> 28) & 8u;
    const float a = f != f ? 6.0f : (f < 0 ? -f : f);
    uint8_t code = 7;
    for (uint8_t c = 0; c < 7; ++c) {
        const float mid = 0.5f * (kFp4Values[c] + kFp4Values[c + 1]);
        if (a < mid || (a == mid && (c & 1u) == 0)) { code = c; break; }
    }
    return uint8_t(sign | code);
}

template <class T> constexpr bool is_floating =
    is_same<T, float>::value || is_same<T, double>::value || is_same<T, half>::value || is_same<T, bfloat16>::value
    || is_same<T, fp8_e4m3fn>::value || is_same<T, fp8_e5m2>::value || is_same<T, fp8_e8m0>::value
    || is_same<T, hif8>::value;

// The type element arithmetic is done in: float for 16-bit floats, a wider int for small
// ints (no promotion surprises, wrap-around on narrowing like the hardware).
template <class T> struct calc { using type = T; };
template <> struct calc<half> { using type = float; };
template <> struct calc<bfloat16> { using type = float; };
template <> struct calc<fp8_e4m3fn> { using type = float; };
template <> struct calc<fp8_e5m2> { using type = float; };
template <> struct calc<fp8_e8m0> { using type = float; };
template <> struct calc<hif8> { using type = float; };
template <> struct calc<int8_t> { using type = int32_t; };
template <> struct calc<uint8_t> { using type = int32_t; };
template <> struct calc<int16_t> { using type = int32_t; };
template <> struct calc<int32_t> { using type = int64_t; };
template <class T> using calc_t = typename calc<T>::type;

// Rounding modes of pto.tcvt (#pto<round_mode X>): to nearest (ties to even / away from
// zero), toward -inf / +inf / zero, and to odd (an inexact result keeps an odd last bit).
enum RoundMode { RM_RINT = 0, RM_ROUND = 1, RM_FLOOR = 2, RM_CEIL = 3, RM_TRUNC = 4, RM_ODD = 5 };

// The narrow floats whose codes grow with magnitude (sign-magnitude), so a value's two
// neighbours are its round-to-nearest-even code and the code next to it.
template <class T> constexpr bool is_ordered_narrow_float =
    is_same<T, half>::value || is_same<T, bfloat16>::value || is_same<T, fp8_e4m3fn>::value
    || is_same<T, fp8_e5m2>::value;

template <class D> inline D round_float(float x, int mode) {
    D r(x);                                                           // to nearest, ties to even
    const float back = float(r);
    if (mode == RM_RINT || x != x || back == x) return r;
    const bool r_above = (back < 0 ? -back : back) > (x < 0 ? -x : x);
    D o = r;
    o.bits = decltype(r.bits)(r_above ? r.bits - 1 : r.bits + 1);     // the other neighbour
    const float ob = float(o);
    if (ob != ob || ob - ob != 0)        // r is the largest finite: only rounding up reaches infinity
        return ob == ob && mode == (x > 0 ? RM_CEIL : RM_FLOOR) ? o : r;   // (e4m3fn: NaN there, saturates)
    const D lo = r_above ? o : r, hi = r_above ? r : o;               // by magnitude
    switch (mode) {
        case RM_TRUNC: return lo;
        case RM_FLOOR: return x > 0 ? lo : hi;
        case RM_CEIL: return x > 0 ? hi : lo;
        case RM_ODD: return (r.bits & 1u) ? r : o;
        default: {                                                    // RM_ROUND: ties away from zero
            const double dl = double(x) - double(float(lo)), dh = double(float(hi)) - double(x);
            const double a = dl < 0 ? -dl : dl, b = dh < 0 ? -dh : dh;
            return a == b ? hi : r;
        }
    }
}

template <class D, class S> inline D convert(S v, int mode) {
    if constexpr (is_same<D, S>::value) {
        return v;
    } else if constexpr (is_same<D, hif8>::value) {
        return hif8(float(v), mode);               // (its conversions round by the mode)
    } else if constexpr (is_floating<D>) {
        const float x = is_floating<S> ? float(v) : float(double(v));   // (i32 past 2^24: rounded once here)
        if constexpr (is_ordered_narrow_float<D>) return round_float<D>(x, mode);
        else return D(x);
    } else {
        double x;
        if constexpr (is_floating<S>) x = double(float(v));
        else x = double(v);
        if (x != x) return D(0);  // NaN
        switch (mode) {
            case RM_ROUND: x = __builtin_round(x); break;
            case RM_FLOOR: x = __builtin_floor(x); break;
            case RM_CEIL: x = __builtin_ceil(x); break;
            case RM_TRUNC: x = __builtin_trunc(x); break;
            case RM_ODD: {
                const double t = __builtin_trunc(x);
                x = (t != x && __builtin_fmod(t, 2.0) == 0.0) ? t + (x > 0 ? 1.0 : -1.0) : t;
                break;
            }
            default: x = __builtin_nearbyint(x); break;
        }
        // saturate like the hardware conversion units (the bounds as doubles may round up:
        // at or past them the result is the limit itself)
        constexpr double lo = double(std::numeric_limits<D>::lowest());
        constexpr double hi = double(std::numeric_limits<D>::max());
        if (x <= lo) return std::numeric_limits<D>::lowest();
        if (x >= hi) return std::numeric_limits<D>::max();
        if constexpr (is_signed_int<D>) return D(int64_t(x));
        else return D(uint64_t(x));
    }
}

// ---------------------------------------------------------------- on-chip memory
// One arena per space per simulated core. Runtime threads are cores, so each thread owns
// private UB/L1/L0A/L0B/L0C. Capacities are the usable limits the planner works within.
enum Space : int { VEC = 0, MAT = 1, LEFT = 2, RIGHT = 3, ACC = 4, BIAS = 5, SCALING = 6, NSPACE = 7 };

#ifdef PTO_ARCH_A5
constexpr int64_t kCapacity[NSPACE] = {245760, 524288, 65536, 65536, 262144, 4096, 4096};
constexpr const char* kArch = "a5";
#else
constexpr int64_t kCapacity[NSPACE] = {188416, 524288, 65536, 65536, 131072, 1024, 2048};
constexpr const char* kArch = "a2a3";
#endif
constexpr const char* kSpaceName[NSPACE] = {"vec", "mat", "left", "right", "acc", "bias", "scaling"};

inline int64_t space_offset(int s) {
    int64_t off = 0;
    for (int i = 0; i < s; ++i) off += kCapacity[i];
    return off;
}

struct Arena {
    unsigned char* base = nullptr;
    ~Arena() { std::free(base); }
};

// The arena is a function-local static of an inline function: one object per thread for
// every kernel library loaded (g++ makes it a unique symbol), whatever arch the library was
// built for, so it is sized for the larger arch's spaces (a5's) and any kernel fits -- a
// thread may run a2a3 and a5 kernels in turn (the launching thread, the helper threads).
constexpr int64_t kArenaBytes = 245760 + 524288 + 65536 + 65536 + 262144 + 4096 + 4096;
// calloc so untouched pages of a big arena cost no memory; freed when the thread exits.
inline unsigned char* space_base(int s) {
    static thread_local Arena arena;
    if (space_offset(NSPACE) > kArenaBytes) fail("pto_sim", "the on-chip spaces outgrow the arena");
    if (!arena.base) {
        arena.base = static_cast<unsigned char*>(std::calloc(1, size_t(kArenaBytes)));
        if (!arena.base) fail("pto_sim", "cannot allocate the on-chip buffers of this core");
    }
    return arena.base + space_offset(s);
}

// ---------------------------------------------------------------- time split
// Nanoseconds the calling thread (= core) spent moving data -- GM <-> on-chip, between on-chip
// spaces, through a core group's pipe -- since the runtime last read it: after a kernel call
// it reads and clears it (pypto_kernel_move_ns) for the swimlane; the rest of the call is
// compute. Two clock reads per tile move, nothing per element.
inline int64_t& move_ns() {
    static thread_local int64_t ns = 0;
    return ns;
}
inline int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
struct MoveTimer {
    int64_t t0 = now_ns();
    ~MoveTimer() { move_ns() += now_ns() - t0; }
};

// ---------------------------------------------------------------- scalar helpers
template <class T> inline T max_(T a, T b) { return a < b ? b : a; }
template <class T> inline T min_(T a, T b) { return b < a ? b : a; }

template <class T> inline T divsi(T a, T b, const char* site) {
    if (b == 0) fail(site, "integer division by zero");
    return T(a / b);
}
template <class T> inline T remsi(T a, T b, const char* site) {
    if (b == 0) fail(site, "integer remainder by zero");
    return T(a % b);
}
template <class T> inline T floordivsi(T a, T b, const char* site) {
    T q = divsi(a, b, site);
    return (q * b != a && ((a < 0) != (b < 0))) ? T(q - 1) : q;
}
template <class T> inline T ceildivsi(T a, T b, const char* site) {
    T q = divsi(a, b, site);
    return (q * b != a && ((a < 0) == (b < 0))) ? T(q + 1) : q;
}

}  // namespace pto

// read and clear this thread's data-movement time (pto::move_ns)
extern "C" __attribute__((visibility("default"), used)) inline int64_t pypto_kernel_move_ns(void) {
    const int64_t ns = pto::move_ns();
    pto::move_ns() = 0;
    return ns;
}
