// pto_sim: the header-only tile library that pypto.ptoas emits C++ against.
//
// A Tile is a typed window at a byte address inside one on-chip space of the calling
// thread (= simulated core). Its rows/cols are the constants of the tile_buf type; the
// valid rows/cols are runtime values. Ops have logical row-major semantics over the valid
// region; layout attributes only matter to the verifier. Every op checks its shapes and
// throws pto::Error naming its call site instead of writing out of bounds.
#pragma once
#include <limits>
#include <vector>
#include "pto_sim_base.hpp"
#include "pto_sim_gm.hpp"

namespace pto {

template <class T> struct Tile {
    T* p;
    int32_t rows, cols, vr, vc;
    int32_t space;
    int64_t addr;
    int32_t stride;   // elements from one row to the next: cols, or the base tile's for a subview
    T* row(int64_t i) const { return p + i * stride; }
};

template <class T>
inline Tile<T> alloc_tile(int space, int64_t addr, int32_t rows, int32_t cols, int64_t vr, int64_t vc,
                          const char* site) {
    int64_t bytes = int64_t(rows) * cols * int64_t(sizeof(T));
    if (addr < 0 || addr % 32 != 0) fail(site, "tile address %lld is not a 32-byte aligned offset", (long long)addr);
    if (addr + bytes > kCapacity[space])
        fail(site, "tile [%lld, %lld) overflows %s (capacity %lld bytes on %s)", (long long)addr,
             (long long)(addr + bytes), kSpaceName[space], (long long)kCapacity[space], kArch);
    if (vr < 0 || vr > rows || vc < 0 || vc > cols)
        fail(site, "valid shape %lldx%lld exceeds the tile shape %dx%d", (long long)vr, (long long)vc, rows, cols);
    Tile<T> t;
    t.p = reinterpret_cast<T*>(space_base(space) + addr);
    t.rows = rows;
    t.cols = cols;
    t.vr = int32_t(vr);
    t.vc = int32_t(vc);
    t.space = space;
    t.addr = addr;
    t.stride = cols;
    return t;
}

// pto.subview: a window of a tile, at (r, c), rows x cols, over the same bytes, of which the
// first vr x vc hold data (the window may run past the tile; the valid part may not).
template <class T>
inline Tile<T> subview(const Tile<T>& s, int64_t r, int64_t c, int32_t rows, int32_t cols, int64_t vr,
                       int64_t vc, const char* site) {
    if (vr < 0 || vr > rows || vc < 0 || vc > cols)
        fail(site, "subview valid %lldx%lld exceeds its %dx%d window", (long long)vr, (long long)vc, rows, cols);
    if (r < 0 || c < 0 || r + vr > s.rows || c + vc > s.cols)
        fail(site, "subview [%lld:%lld, %lld:%lld] lies outside the %dx%d tile", (long long)r,
             (long long)(r + vr), (long long)c, (long long)(c + vc), s.rows, s.cols);
    Tile<T> t = s;
    t.p = s.row(r) + c;
    t.rows = rows;
    t.cols = cols;
    t.vr = int32_t(vr);
    t.vc = int32_t(vc);
    t.addr = s.addr + (r * s.stride + c) * int64_t(sizeof(T));
    return t;
}

// pto.treshape: the same bytes seen with another shape (and possibly element type).
template <class U, class T>
inline Tile<U> treshape(const Tile<T>& s, int32_t rows, int32_t cols, int64_t vr, int64_t vc, const char* site) {
    if (int64_t(rows) * cols * int64_t(sizeof(U)) != int64_t(s.rows) * s.cols * int64_t(sizeof(T)))
        fail(site, "reshape %dx%d -> %dx%d changes the byte size", s.rows, s.cols, rows, cols);
    return alloc_tile<U>(s.space, s.addr, rows, cols, vr, vc, site);
}

// pto.tgetval / pto.tsetval: one element of a vec tile at a row-major offset.
template <class T> inline T* element(const Tile<T>& t, int64_t off, const char* site) {
    if (t.space != VEC) fail(site, "element access needs a vec tile, not %s", kSpaceName[t.space]);
    if (off < 0 || off >= int64_t(t.rows) * t.cols)
        fail(site, "element offset %lld is outside the %dx%d tile", (long long)off, t.rows, t.cols);
    return t.row(off / t.cols) + off % t.cols;
}
template <class T> inline T tgetval(const Tile<T>& t, int64_t off, const char* site) { return *element(t, off, site); }
template <class T, class V> inline void tsetval(const Tile<T>& t, int64_t off, V v, const char* site) {
    *element(t, off, site) = T(v);
}

template <class A, class B> inline void same_valid(const Tile<A>& a, const Tile<B>& b, const char* site) {
    if (a.vr != b.vr || a.vc != b.vc)
        fail(site, "valid shapes differ: %dx%d vs %dx%d", a.vr, a.vc, b.vr, b.vc);
}

// ---------------------------------------------------------------- elementwise
// The element loops are built three times, for x86-64's baseline, AVX2 and AVX-512 (picked
// when the .so is loaded): more lanes, the same results (no FMA: the same roundings in the
// same order), and the bytes still do not depend on the machine that built them.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PTO_VEC_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PTO_VEC_CLONES
#endif

template <class T, class F> PTO_VEC_CLONES inline void map1(const Tile<T>& d, const Tile<T>& a, F f, const char* site) {
    same_valid(d, a, site);
    using C = calc_t<T>;
    for (int64_t i = 0; i < d.vr; ++i) {
        T* dr = d.row(i);
        const T* ar = a.row(i);
        for (int64_t j = 0; j < d.vc; ++j) dr[j] = T(f(C(ar[j])));
    }
}

// b may be a full tile, a column vector [M,1] (per-row value) or a row vector [1,N].
enum Bcast { B_FULL = 1, B_ROW = 2, B_COL = 4, B_ANY = 7 };

template <class T, class F>
PTO_VEC_CLONES inline void map2(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, int allowed, F f, const char* site) {
    same_valid(d, a, site);
    int64_t si, sj;  // strides into b
    if ((allowed & B_FULL) && b.vr == d.vr && b.vc == d.vc) { si = b.stride; sj = 1; }
    else if ((allowed & B_ROW) && b.vr == d.vr && b.vc == 1) { si = b.stride; sj = 0; }
    else if ((allowed & B_COL) && b.vr == 1 && b.vc == d.vc) { si = 0; sj = 1; }
    else fail(site, "operand shape %dx%d does not broadcast to %dx%d", b.vr, b.vc, d.vr, d.vc);
    using C = calc_t<T>;
    // one loop per case, each with unit strides, so the compiler vectorises it
    for (int64_t i = 0; i < d.vr; ++i) {
        T* dr = d.row(i);
        const T* ar = a.row(i);
        const T* br = b.p + i * si;
        if (sj) {
            for (int64_t j = 0; j < d.vc; ++j) dr[j] = T(f(C(ar[j]), C(br[j])));
        } else {
            const C y = C(br[0]);
            for (int64_t j = 0; j < d.vc; ++j) dr[j] = T(f(C(ar[j]), y));
        }
    }
}

template <class C> inline C div_(C x, C y, const char* site) {
    if constexpr (is_int<C>) return divsi(x, y, site);
    else return x / y;
}
// fmod: the remainder with the dividend's sign (C's fmod / %); rem: with the divisor's
// sign (floored, like torch.remainder)
template <class C> inline C fmod_(C x, C y, const char* site) {
    if constexpr (is_int<C>) return remsi(x, y, site);
    else return C(__builtin_fmod(double(x), double(y)));
}
template <class C> inline C rem_(C x, C y, const char* site) {
    C r = fmod_(x, y, site);
    return (r != C(0) && ((r < C(0)) != (y < C(0)))) ? C(r + y) : r;
}

#define PTO_BINARY(NAME, ALLOWED, EXPR)                                                         \
    template <class T>                                                                          \
    inline void NAME(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* site) { \
        map2(d, a, b, ALLOWED, [site](auto x, auto y) { (void)site; return EXPR; }, site);      \
    }
PTO_BINARY(tadd, B_ANY, x + y)
PTO_BINARY(tsub, B_ANY, x - y)
PTO_BINARY(tmul, B_ANY, x * y)
PTO_BINARY(tdiv, B_ANY, div_(x, y, site))
PTO_BINARY(tmax, B_ANY, max_(x, y))
PTO_BINARY(tmin, B_ANY, min_(x, y))
PTO_BINARY(tfmod, B_FULL, fmod_(x, y, site))
PTO_BINARY(trem, B_FULL, rem_(x, y, site))
PTO_BINARY(tand, B_FULL, x & y)
PTO_BINARY(tor, B_FULL, x | y)
PTO_BINARY(txor, B_FULL, x ^ y)
PTO_BINARY(tshl, B_FULL, x << y)
PTO_BINARY(tshr, B_FULL, x >> y)
// pto.trowexpandadd: b a value per row [M, 1], or a packed 32-byte block per row whose lanes
// repeat across the row; a scratch tile (the hardware's workspace) may follow.
template <class T>
inline void trowexpandadd(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* site) {
    constexpr int64_t lanes = 32 / int64_t(sizeof(T));
    if (b.vc == 1) {
        map2(d, a, b, B_ROW, [](auto x, auto y) { return x + y; }, site);
        return;
    }
    if (b.vc != lanes || b.vr != d.vr)
        fail(site, "the per-row operand %dx%d is neither %dx1 nor a %dx%lld block carrier", b.vr, b.vc, d.vr,
             d.vr, (long long)lanes);
    same_valid(d, a, site);
    using C = calc_t<T>;
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = T(C(a.row(i)[j]) + C(b.row(i)[j % lanes]));
}
PTO_BINARY(trowexpandsub, B_ROW, x - y)
PTO_BINARY(trowexpandmul, B_ROW, x * y)
PTO_BINARY(trowexpanddiv, B_ROW, div_(x, y, site))
PTO_BINARY(trowexpandmax, B_ROW, max_(x, y))
PTO_BINARY(trowexpandmin, B_ROW, min_(x, y))
PTO_BINARY(tcolexpandadd, B_COL, x + y)
PTO_BINARY(tcolexpandsub, B_COL, x - y)
PTO_BINARY(tcolexpandmul, B_COL, x * y)
PTO_BINARY(tcolexpanddiv, B_COL, div_(x, y, site))
PTO_BINARY(tcolexpandmax, B_COL, max_(x, y))
PTO_BINARY(tcolexpandmin, B_COL, min_(x, y))
#undef PTO_BINARY

// Tile-scalar ops; the scalar is converted to the element's compute type once.
#define PTO_SCALAR(NAME, EXPR)                                                            \
    template <class T, class S>                                                           \
    inline void NAME(const Tile<T>& d, const Tile<T>& a, S s, const char* site) {         \
        using C = calc_t<T>;                                                              \
        const C y = C(s);                                                                 \
        map1(d, a, [y, site](C x) { (void)site; return EXPR; }, site);                   \
    }
PTO_SCALAR(tadds, x + y)
PTO_SCALAR(tsubs, x - y)
PTO_SCALAR(tmuls, x * y)
PTO_SCALAR(tdivs, div_(x, y, site))
PTO_SCALAR(tmaxs, max_(x, y))
PTO_SCALAR(tmins, min_(x, y))
PTO_SCALAR(tfmods, fmod_(x, y, site))
PTO_SCALAR(trems, rem_(x, y, site))
PTO_SCALAR(tlrelu, x > C(0) ? x : C(x * y))
PTO_SCALAR(tands, x & y)
PTO_SCALAR(tors, x | y)
PTO_SCALAR(txors, x ^ y)
PTO_SCALAR(tshls, x << y)
PTO_SCALAR(tshrs, x >> y)
#undef PTO_SCALAR

template <class C> inline C abs_(C x) { return x < C(0) ? C(-x) : x; }

// exp of a float without a library call, so that a tile's loop vectorises: e^x = 2^n e^r with
// n = round(x / ln 2) and |r| <= ln 2 / 2 (r by Cody and Waite's two-part ln 2, exact for the n
// that occur), e^r by its Taylor series to r^7 (truncation under 1e-8 relative; within 2 ulp of
// the correctly rounded result), 2^n applied in two halves so that results from the
// subnormals up to infinity come out right. NaN stays NaN.
inline float math_exp(float x) {
    const float xc = x > -104.0f ? (x < 89.0f ? x : 89.0f) : -104.0f;   // NaN -> -104: n stays finite
    const float big = 12582912.0f;                        // 1.5 * 2^23: adding it rounds to an integer
    const float n = (xc * 1.44269504088896341f + big) - big;
    const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const int32_t k = int32_t(n), k1 = k >> 1, k2 = k - k1;
    const float y = p * f32_from_bits(uint32_t(k1 + 127) << 23) * f32_from_bits(uint32_t(k2 + 127) << 23);
    return x != x ? x : y;
}
inline double math_exp(double x) { return __builtin_exp(x); }
inline float math_log(float x) { return __builtin_logf(x); }
inline float math_sin(float x) { return __builtin_sinf(x); }
inline double math_sin(double x) { return __builtin_sin(x); }
inline float math_cos(float x) { return __builtin_cosf(x); }
inline double math_cos(double x) { return __builtin_cos(x); }
inline double math_log(double x) { return __builtin_log(x); }
inline float math_sqrt(float x) { return __builtin_sqrtf(x); }
inline double math_sqrt(double x) { return __builtin_sqrt(x); }

#define PTO_UNARY(NAME, EXPR)                                                      \
    template <class T> inline void NAME(const Tile<T>& d, const Tile<T>& a, const char* site) { \
        using C = calc_t<T>;                                                       \
        map1(d, a, [](C x) { return EXPR; }, site);                                \
    }
PTO_UNARY(tabs, abs_(x))
PTO_UNARY(tneg, C(-x))
PTO_UNARY(trelu, x > C(0) ? x : C(0))
PTO_UNARY(tnot, C(~x))
PTO_UNARY(texp, C(math_exp(x)))
PTO_UNARY(tlog, C(math_log(x)))
PTO_UNARY(tsin, C(math_sin(x)))
PTO_UNARY(tcos, C(math_cos(x)))
PTO_UNARY(tsqrt, C(math_sqrt(x)))
PTO_UNARY(trsqrt, C(C(1) / math_sqrt(x)))
PTO_UNARY(trecip, C(C(1) / x))
#undef PTO_UNARY

// exp(x - v) with v per row / per column (the softmax step in one op)
template <class T> inline void trowexpandexpdif(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* site) {
    map2(d, a, b, B_ROW, [](auto x, auto y) { return decltype(x)(math_exp(x - y)); }, site);
}
template <class T> inline void tcolexpandexpdif(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* site) {
    map2(d, a, b, B_COL, [](auto x, auto y) { return decltype(x)(math_exp(x - y)); }, site);
}

// ---------------------------------------------------------------- broadcasts / fills
template <class T, class S> inline void texpands(const Tile<T>& d, S s, const char* /*site*/) {
    const T v = T(calc_t<T>(s));
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = v;
}
template <class T> inline void trowexpand(const Tile<T>& d, const Tile<T>& v, const char* site) {
    if (v.vr != d.vr || v.vc != 1) fail(site, "row expand needs a %dx1 source, got %dx%d", d.vr, v.vr, v.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = v.row(i)[0];
}
template <class T> inline void tcolexpand(const Tile<T>& d, const Tile<T>& v, const char* site) {
    if (v.vr != 1 || v.vc != d.vc) fail(site, "column expand needs a 1x%d source, got %dx%d", d.vc, v.vr, v.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = v.p[j];
}

// pto.tfillpad: d holds s's valid region and the pad value everywhere else, and is valid
// over its whole shape (pad: the `pad` attribute of d's tile_buf: 1 zero, 2 max, 3 min;
// max/min are +inf/-inf for floats, the type's limits for integers). d and s may be one
// buffer (an in-place fillpad).
template <class T> inline T pad_value(int pad, const char* site) {
    using C = calc_t<T>;
    if (pad == 1) return T(C(0));
    if (pad != 2 && pad != 3) fail(site, "tfillpad needs a pad value (zero, max or min), got pad=%d", pad);
    if constexpr (is_int<T>) return pad == 2 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::min();
    else return T(C(pad == 2 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity()));
}
template <class T> inline void tfillpad(const Tile<T>& d, const Tile<T>& s, int pad, const char* site) {
    if (d.rows < s.rows || d.cols < s.cols)
        fail(site, "tfillpad cannot shrink a tile: %dx%d -> %dx%d", s.rows, s.cols, d.rows, d.cols);
    if (d.vr != d.rows || d.vc != d.cols)
        fail(site, "tfillpad's result is valid over the whole %dx%d tile, not %dx%d", d.rows, d.cols, d.vr, d.vc);
    const T v = pad_value<T>(pad, site);
    for (int64_t i = 0; i < d.rows; ++i) {
        T* dr = d.row(i);
        const T* sr = s.row(i);
        for (int64_t j = 0; j < d.cols; ++j) {
            if (i < s.vr && j < s.vc) { if (dr != sr || d.cols != s.cols) dr[j] = sr[j]; }
            else dr[j] = v;
        }
    }
}

// pto.ttri: ones on and below (upper=0) or on and above (upper=1) the diagonal `diag`
// (0 the main one, > 0 above it), zeros elsewhere, over the valid region.
template <class T, class S> inline void ttri(const Tile<T>& d, S diag, int upper, const char* /*site*/) {
    const int64_t k = int64_t(diag);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) {
            const bool one = upper ? (j - i >= k) : (j - i <= k);
            d.row(i)[j] = T(calc_t<T>(one ? 1 : 0));
        }
}

// Compare and select. A mask tile holds one bit per element of the compared tiles: bit
// j % 8 of byte j / 8 of row i (least significant bit first) for element (i, j).
// cmp_type: 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=.
template <class C> inline bool cmp_(C x, C y, int t) {
    switch (t) {
        case 0: return x == y;
        case 1: return x != y;
        case 2: return x < y;
        case 3: return x <= y;
        case 4: return x > y;
        default: return x >= y;
    }
}
template <class T, class F> inline void cmp_mask(const Tile<uint8_t>& m, const Tile<T>& a, F bit, const char* site) {
    if (int64_t(m.cols) * 8 < a.vc || m.rows < a.vr)
        fail(site, "a %dx%d mask holds no bit for every element of %dx%d", m.rows, m.cols, a.vr, a.vc);
    for (int64_t i = 0; i < a.vr; ++i) {
        uint8_t* mr = m.row(i);
        for (int64_t b = 0; b < m.cols; ++b) mr[b] = 0;
        for (int64_t j = 0; j < a.vc; ++j)
            if (bit(i, j)) mr[j >> 3] = uint8_t(mr[j >> 3] | (1u << (j & 7)));
    }
}
template <class T> inline void tcmp(const Tile<uint8_t>& m, const Tile<T>& a, const Tile<T>& b, int t, const char* site) {
    same_valid(a, b, site);
    using C = calc_t<T>;
    cmp_mask(m, a, [&](int64_t i, int64_t j) { return cmp_(C(a.row(i)[j]), C(b.row(i)[j]), t); }, site);
}
template <class T, class S> inline void tcmps(const Tile<uint8_t>& m, const Tile<T>& a, S s, int t, const char* site) {
    using C = calc_t<T>;
    const C y = C(s);
    cmp_mask(m, a, [&](int64_t i, int64_t j) { return cmp_(C(a.row(i)[j]), y, t); }, site);
}
// a mask carrier of any integer dtype: its bytes are the bits
template <class M> inline bool mask_bit(const Tile<M>& m, int64_t i, int64_t j) {
    return (reinterpret_cast<const uint8_t*>(m.row(i))[j >> 3] >> (j & 7)) & 1;
}
template <class M> inline int64_t mask_bits(const Tile<M>& m) { return int64_t(m.cols) * int64_t(sizeof(M)) * 8; }
template <class T, class M> inline void tsel(const Tile<T>& d, const Tile<M>& m, const Tile<T>& a, const Tile<T>& b, const char* site) {
    same_valid(d, a, site);
    same_valid(d, b, site);
    if (mask_bits(m) < d.vc || m.rows < d.vr) fail(site, "the mask is too small for %dx%d", d.vr, d.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = mask_bit(m, i, j) ? a.row(i)[j] : b.row(i)[j];
}
template <class T, class M, class S> inline void tsels(const Tile<T>& d, const Tile<M>& m, const Tile<T>& a, S s, const char* site) {
    same_valid(d, a, site);
    if (mask_bits(m) < d.vc || m.rows < d.vr) fail(site, "the mask is too small for %dx%d", d.vr, d.vc);
    const T v = T(calc_t<T>(s));
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = mask_bit(m, i, j) ? a.row(i)[j] : v;
}

// pto.tci: an index ramp, start + k (or start - k, descending) at row-major position k
// of the valid region.
template <class T, class S> inline void tci(const Tile<T>& d, S start, int descending, const char* /*site*/) {
    using C = calc_t<T>;
    int64_t k = 0;
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j, ++k) d.row(i)[j] = T(C(descending ? int64_t(start) - k : int64_t(start) + k));
}

// pto.tconcat: [M, N1] and [M, N2] side by side into [M, N1 + N2].
template <class T> inline void tconcat(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* site) {
    if (a.vr != b.vr || d.vr != a.vr || d.vc != a.vc + b.vc)
        fail(site, "concat of %dx%d and %dx%d needs a %dx%d result, got %dx%d", a.vr, a.vc, b.vr, b.vc,
             a.vr, a.vc + b.vc, d.vr, d.vc);
    if (d.p == a.p || d.p == b.p) fail(site, "concat cannot run in place");
    for (int64_t i = 0; i < d.vr; ++i) {
        for (int64_t j = 0; j < a.vc; ++j) d.row(i)[j] = a.row(i)[j];
        for (int64_t j = 0; j < b.vc; ++j) d.row(i)[a.vc + j] = b.row(i)[j];
    }
}

// pto.tinsert: s's valid region written into d at (r, c); the rest of d is unchanged.
template <class D, class S, class I>
inline void tinsert(const Tile<D>& d, const Tile<S>& s, I r, I c, const char* site) {
    MoveTimer moving;
    if (r < 0 || c < 0 || int64_t(r) + s.vr > d.vr || int64_t(c) + s.vc > d.vc)
        fail(site, "inserting %dx%d at (%lld, %lld) leaves the %dx%d tile", s.vr, s.vc, (long long)r,
             (long long)c, d.vr, d.vc);
    for (int64_t i = 0; i < s.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) d.row(int64_t(r) + i)[int64_t(c) + j] = D(calc_t<D>(s.row(i)[j]));
}

// ---------------------------------------------------------------- reductions
// Row reductions write [M,1]; column reductions write [1,N]. Each step rounds to the
// element type, as the vector unit computes in it (fp16 sums stay fp16). A row is reduced
// as a binary tree (pairs (0,1), (2,3), ..., an odd last element added to the first),
// and so is a column when the hardware's scratch tile is given (TCOLSUM's 4-operand
// form); a column without it is summed top to bottom (the 2-operand form).
template <class T, class F> inline T step(T a, T b, F f) { return T(f(calc_t<T>(a), calc_t<T>(b))); }
template <class T, class F>
PTO_VEC_CLONES inline void pair_step(T* __restrict d, const T* __restrict s, int64_t half, F f) {
    for (int64_t i = 0; i < half; ++i) d[i] = step(s[2 * i], s[2 * i + 1], f);
}
// the n values are read from `in` (left as they are); each level goes from one scratch
// half-buffer (buf, tmp: n/2 each) to the other, so its loop vectorises
template <class T, class F> inline T tree_reduce(const T* in, T* buf, T* tmp, int64_t n, F f) {
    if (n == 1) return in[0];
    const T* src = in;
    T* dst = buf;
    T* spare = tmp;
    for (int64_t cnt = n; cnt > 1; cnt /= 2) {
        const int64_t half = cnt / 2;
        pair_step(dst, src, half, f);
        if (cnt % 2) dst[0] = step(dst[0], src[cnt - 1], f);
        src = dst;
        T* t = spare;
        spare = dst;
        dst = t;
    }
    return src[0];
}
template <class T> struct Scratch {                 // one row or column of a reduction
    // on the stack up to 16 KB: a [8, 1024] f32 row sum made one heap allocation per tile
    static constexpr int64_t kLocal = 16384 / int64_t(sizeof(T));
    alignas(64) T local[kLocal];
    T* p;
    explicit Scratch(int64_t n) : p(n <= kLocal ? local : new T[n]) {}
    ~Scratch() {
        if (p != local) delete[] p;
    }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
};
enum RedOp { RED_SUM, RED_MAX, RED_MIN, RED_PROD };
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PTO_ROWS8 1
// Eight f32 rows reduced side by side, row r in lane r, in tree_reduce's order with the
// same roundings (each step one IEEE op; max_ / min_ as selects): each 8x8 block of the
// rows is transposed and its first three levels -- the tree of each row's 8 values --
// combined in registers; the remaining levels run down the block results. n is a multiple
// of 8, so those first levels pair exactly the values tree_reduce pairs. GCC's vector
// types, not <immintrin.h> (whose parsing alone doubled a kernel's compile time).
typedef float v8f __attribute__((vector_size(32)));
typedef float v8f_u __attribute__((vector_size(32), aligned(4), __may_alias__));   // unaligned loads, stores
template <int OP> __attribute__((target("avx2"), always_inline)) inline v8f red8(v8f a, v8f b) {
    if constexpr (OP == RED_SUM) return a + b;
    else if constexpr (OP == RED_PROD) return a * b;
    else if constexpr (OP == RED_MAX) return a < b ? b : a;
    else return b < a ? b : a;
}
template <int OP>
__attribute__((target("avx2"))) void tree_rows8_f32(float* out, int64_t ostride, const float* s, int64_t stride,
                                                   int64_t n, float* buf) {
    for (int64_t k = 0; k < n; k += 8) {
        const v8f r[8] = {*(const v8f_u*)(s + k), *(const v8f_u*)(s + stride + k),
                          *(const v8f_u*)(s + 2 * stride + k), *(const v8f_u*)(s + 3 * stride + k),
                          *(const v8f_u*)(s + 4 * stride + k), *(const v8f_u*)(s + 5 * stride + k),
                          *(const v8f_u*)(s + 6 * stride + k), *(const v8f_u*)(s + 7 * stride + k)};
        // the 8x8 transpose: pairs interleaved, then quads, then the 128-bit halves (GCC's
        // builtins behind _mm256_unpacklo_ps / _mm256_shuffle_ps / _mm256_permute2f128_ps)
        const v8f t0 = __builtin_ia32_unpcklps256(r[0], r[1]), t1 = __builtin_ia32_unpckhps256(r[0], r[1]);
        const v8f t2 = __builtin_ia32_unpcklps256(r[2], r[3]), t3 = __builtin_ia32_unpckhps256(r[2], r[3]);
        const v8f t4 = __builtin_ia32_unpcklps256(r[4], r[5]), t5 = __builtin_ia32_unpckhps256(r[4], r[5]);
        const v8f t6 = __builtin_ia32_unpcklps256(r[6], r[7]), t7 = __builtin_ia32_unpckhps256(r[6], r[7]);
        const v8f u0 = __builtin_ia32_shufps256(t0, t2, 0x44), u1 = __builtin_ia32_shufps256(t0, t2, 0xEE);
        const v8f u2 = __builtin_ia32_shufps256(t1, t3, 0x44), u3 = __builtin_ia32_shufps256(t1, t3, 0xEE);
        const v8f u4 = __builtin_ia32_shufps256(t4, t6, 0x44), u5 = __builtin_ia32_shufps256(t4, t6, 0xEE);
        const v8f u6 = __builtin_ia32_shufps256(t5, t7, 0x44), u7 = __builtin_ia32_shufps256(t5, t7, 0xEE);
        // column c of the block (value k + c of every row)
        const v8f c0 = __builtin_ia32_vperm2f128_ps256(u0, u4, 0x20), c1 = __builtin_ia32_vperm2f128_ps256(u1, u5, 0x20);
        const v8f c2 = __builtin_ia32_vperm2f128_ps256(u2, u6, 0x20), c3 = __builtin_ia32_vperm2f128_ps256(u3, u7, 0x20);
        const v8f c4 = __builtin_ia32_vperm2f128_ps256(u0, u4, 0x31), c5 = __builtin_ia32_vperm2f128_ps256(u1, u5, 0x31);
        const v8f c6 = __builtin_ia32_vperm2f128_ps256(u2, u6, 0x31), c7 = __builtin_ia32_vperm2f128_ps256(u3, u7, 0x31);
        const v8f left = red8<OP>(red8<OP>(c0, c1), red8<OP>(c2, c3));
        const v8f right = red8<OP>(red8<OP>(c4, c5), red8<OP>(c6, c7));
        *(v8f_u*)(buf + k) = red8<OP>(left, right);
    }
    for (int64_t cnt = n / 8; cnt > 1; cnt /= 2) {      // in place: slot i is read before written
        const int64_t half = cnt / 2;
        for (int64_t i = 0; i < half; ++i)
            *(v8f_u*)(buf + 8 * i) = red8<OP>(*(const v8f_u*)(buf + 16 * i), *(const v8f_u*)(buf + 16 * i + 8));
        if (cnt % 2)
            *(v8f_u*)buf = red8<OP>(*(const v8f_u*)buf, *(const v8f_u*)(buf + 8 * (cnt - 1)));
    }
    for (int i = 0; i < 8; ++i) out[i * ostride] = buf[i];
}
// The first three levels of one row, 64 values at a time: the eight 8-value blocks' trees,
// in block order into sums[k / 8 ..]. Each level pairs even with odd values (shufps picks
// them out of two vectors), so one row is read as one stream, and 14 shuffles do what the
// 8x8 transpose above does in 24 (on a [8, 1024] f32 tile: 20% less time, the same bits).
template <int OP>
__attribute__((target("avx2"))) void blocks8_f32(float* sums, const float* row, int64_t n) {
    for (int64_t k = 0; k < n; k += 64) {
        v8f a[8], l1[4];
        for (int q = 0; q < 8; ++q) a[q] = *(const v8f_u*)(row + k + 8 * q);
        for (int q = 0; q < 4; ++q)     // [b0 p0, b0 p2, b1 p0, b1 p2 | b0 p4, b0 p6, b1 p4, b1 p6]
            l1[q] = red8<OP>(__builtin_ia32_shufps256(a[2 * q], a[2 * q + 1], 0x88),
                             __builtin_ia32_shufps256(a[2 * q], a[2 * q + 1], 0xDD));
        // [b0 q0, b1 q0, b2 q0, b3 q0 | b0 q4, .., b3 q4] (qi: the sum of values i..i+3)
        const v8f l2a = red8<OP>(__builtin_ia32_shufps256(l1[0], l1[1], 0x88), __builtin_ia32_shufps256(l1[0], l1[1], 0xDD));
        const v8f l2b = red8<OP>(__builtin_ia32_shufps256(l1[2], l1[3], 0x88), __builtin_ia32_shufps256(l1[2], l1[3], 0xDD));
        *(v8f_u*)(sums + k / 8) = red8<OP>(__builtin_ia32_vperm2f128_ps256(l2a, l2b, 0x20),
                                           __builtin_ia32_vperm2f128_ps256(l2a, l2b, 0x31));
    }
}
// Eight rows: for n a multiple of 64 each row's block trees, then those n / 8 values per row
// reduced by tree_rows8_f32 (their tree continues the rows' trees level for level; buf holds
// n + n / 8 values); otherwise the 8x8 transposes straight away.
template <int OP>
__attribute__((target("avx2"))) void rows8_f32(float* out, int64_t ostride, const float* s, int64_t stride,
                                              int64_t n, float* buf) {
    if (n % 64 != 0) return tree_rows8_f32<OP>(out, ostride, s, stride, n, buf);
    const int64_t m = n / 8;
    for (int r = 0; r < 8; ++r) blocks8_f32<OP>(buf + r * m, s + r * stride, n);
    tree_rows8_f32<OP>(out, ostride, buf, m, m, buf + n);
}
inline bool has_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2");
    return yes;
}
inline void tree_rows8(float* out, int64_t ostride, const float* s, int64_t stride, int64_t n, float* buf, int op) {
    switch (op) {
    case RED_SUM: return rows8_f32<RED_SUM>(out, ostride, s, stride, n, buf);
    case RED_PROD: return rows8_f32<RED_PROD>(out, ostride, s, stride, n, buf);
    case RED_MAX: return rows8_f32<RED_MAX>(out, ostride, s, stride, n, buf);
    default: return rows8_f32<RED_MIN>(out, ostride, s, stride, n, buf);
    }
}
#endif
template <class T, class F> inline void rowreduce(const Tile<T>& d, const Tile<T>& s, F f, int op, const char* site) {
    if (d.vr != s.vr || d.vc != 1) fail(site, "row reduction of %dx%d needs a %dx1 result, got %dx%d", s.vr, s.vc, s.vr, d.vr, d.vc);
    if (s.vc < 1) fail(site, "row reduction over an empty row");
    Scratch<T> buf(s.vc + s.vc / 8);                    // two halves: a level's in and out (and tree_rows8's n / 8)
    int64_t i = 0;
#ifdef PTO_ROWS8
    if constexpr (is_same<T, float>::value) {
        if (s.vc % 8 == 0 && has_avx2())
            for (; i + 8 <= s.vr; i += 8) tree_rows8(d.row(i), d.stride, s.row(i), s.stride, s.vc, buf.p, op);
    }
#endif
    for (; i < s.vr; ++i)
        d.row(i)[0] = tree_reduce(s.row(i), buf.p, buf.p + s.vc / 2, s.vc, f);
}
template <class T, class F> inline void colreduce(const Tile<T>& d, const Tile<T>& s, F f, bool tree, const char* site) {
    if (d.vr != 1 || d.vc != s.vc) fail(site, "column reduction of %dx%d needs a 1x%d result, got %dx%d", s.vr, s.vc, s.vc, d.vr, d.vc);
    if (s.vr < 1) fail(site, "column reduction over an empty column");
    Scratch<T> buf(2 * s.vr);
    for (int64_t j = 0; j < s.vc; ++j) {
        for (int64_t i = 0; i < s.vr; ++i) buf.p[i] = s.row(i)[j];
        T acc = buf.p[0];
        if (tree)
            acc = tree_reduce(buf.p, buf.p + s.vr, buf.p + s.vr + s.vr / 2, s.vr, f);
        else
            for (int64_t i = 1; i < s.vr; ++i) acc = step(acc, buf.p[i], f);
        d.p[j] = acc;
    }
}
#define PTO_ROWREDUCE(NAME, OP, EXPR)                                                 \
    template <class T> inline void NAME(const Tile<T>& d, const Tile<T>& s, const char* site) { \
        rowreduce(d, s, [](auto a, auto b) { return EXPR; }, OP, site);               \
    }
#define PTO_COLREDUCE(NAME, EXPR)                                                     \
    template <class T> inline void NAME(const Tile<T>& d, const Tile<T>& s, int tree, const char* site) { \
        colreduce(d, s, [](auto a, auto b) { return EXPR; }, tree != 0, site);        \
    }
PTO_ROWREDUCE(trowsum, RED_SUM, a + b)
PTO_ROWREDUCE(trowmax, RED_MAX, max_(a, b))
PTO_ROWREDUCE(trowmin, RED_MIN, min_(a, b))
PTO_ROWREDUCE(trowprod, RED_PROD, a * b)
PTO_COLREDUCE(tcolsum, a + b)
PTO_COLREDUCE(tcolmax, max_(a, b))
PTO_COLREDUCE(tcolmin, min_(a, b))
PTO_COLREDUCE(tcolprod, a * b)
#undef PTO_ROWREDUCE
#undef PTO_COLREDUCE

// Arg reductions: the index (int32) of the first max/min along a row ([M,1] result) or
// down a column ([1,N]); like torch.argmax / argmin on the valid region.
template <class T, bool Max> inline void rowarg(const Tile<int32_t>& d, const Tile<T>& s, const char* site) {
    if (d.vr != s.vr || d.vc != 1) fail(site, "row arg-reduction of %dx%d needs a %dx1 result, got %dx%d", s.vr, s.vc, s.vr, d.vr, d.vc);
    if (s.vc < 1) fail(site, "row arg-reduction over an empty row");
    using C = calc_t<T>;
    for (int64_t i = 0; i < s.vr; ++i) {
        C best = C(s.row(i)[0]);
        int32_t k = 0;
        for (int64_t j = 1; j < s.vc; ++j) {
            const C v = C(s.row(i)[j]);
            if (Max ? v > best : v < best) { best = v; k = int32_t(j); }
        }
        d.row(i)[0] = k;
    }
}
template <class T, bool Max> inline void colarg(const Tile<int32_t>& d, const Tile<T>& s, const char* site) {
    if (d.vr != 1 || d.vc != s.vc) fail(site, "column arg-reduction of %dx%d needs a 1x%d result, got %dx%d", s.vr, s.vc, s.vc, d.vr, d.vc);
    if (s.vr < 1) fail(site, "column arg-reduction over an empty column");
    using C = calc_t<T>;
    for (int64_t j = 0; j < s.vc; ++j) {
        C best = C(s.p[j]);
        int32_t k = 0;
        for (int64_t i = 1; i < s.vr; ++i) {
            const C v = C(s.row(i)[j]);
            if (Max ? v > best : v < best) { best = v; k = int32_t(i); }
        }
        d.p[j] = k;
    }
}
template <class T> inline void trowargmax(const Tile<int32_t>& d, const Tile<T>& s, const char* site) { rowarg<T, true>(d, s, site); }
template <class T> inline void trowargmin(const Tile<int32_t>& d, const Tile<T>& s, const char* site) { rowarg<T, false>(d, s, site); }
template <class T> inline void tcolargmax(const Tile<int32_t>& d, const Tile<T>& s, const char* site) { colarg<T, true>(d, s, site); }
template <class T> inline void tcolargmin(const Tile<int32_t>& d, const Tile<T>& s, const char* site) { colarg<T, false>(d, s, site); }

// ---------------------------------------------------------------- conversion / moves
// FP4 pairs widen: each byte gives two elements (the even one from the low nibble).
template <class D> inline void widen_fp4(const Tile<D>& d, const Tile<fp4x2>& s, int mode, const char* site) {
    if (d.vr != s.vr || d.vc != 2 * s.vc)
        fail(site, "tcvt of %dx%d FP4 pairs gives %dx%d elements, got %dx%d", s.vr, s.vc, s.vr, 2 * s.vc, d.vr, d.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) {
            const uint8_t b = s.row(i)[j].bits;
            d.row(i)[2 * j] = convert<D>(fp4_e2m1_to_f32(b & 0x0Fu), mode);
            d.row(i)[2 * j + 1] = convert<D>(fp4_e2m1_to_f32(uint8_t(b >> 4)), mode);
        }
}
// and narrow into pairs: two elements give a byte
template <class S> inline void narrow_fp4(const Tile<fp4x2>& d, const Tile<S>& s, const char* site) {
    if (d.vr != s.vr || 2 * d.vc != s.vc)
        fail(site, "tcvt of %dx%d elements gives %dx%d FP4 pairs, got %dx%d", s.vr, s.vc, s.vr, s.vc / 2, d.vr, d.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j)
            d.row(i)[j].bits = uint8_t(f32_to_fp4_e2m1(float(s.row(i)[2 * j])) |
                                       (f32_to_fp4_e2m1(float(s.row(i)[2 * j + 1])) << 4));
}
template <class D, class S> inline void tcvt(const Tile<D>& d, const Tile<S>& s, int mode, const char* site) {
    if constexpr (is_same<S, fp4x2>::value) {
        widen_fp4(d, s, mode, site);
    } else if constexpr (is_same<D, fp4x2>::value) {
        narrow_fp4(d, s, site);
    } else {
        same_valid(d, s, site);
        for (int64_t i = 0; i < d.vr; ++i) {
            D* dr = d.row(i);
            const S* sr = s.row(i);
            for (int64_t j = 0; j < d.vc; ++j) dr[j] = convert<D>(sr[j], mode);
        }
    }
}
// tmov copies the valid region between spaces; out of acc it may also convert the dtype.
// The data paths of the target (the verifier checks them too; this keeps C++ built for
// a2a3 honest even if it was verified for a5).
inline void check_path(int src, int dst, const char* site) {
#ifdef PTO_ARCH_A5
    const bool fused = false;
#else
    const bool fused = (src == ACC && dst == VEC) || (src == VEC && dst == MAT);
#endif
    if (fused) fail(site, "tmov %s -> %s is not a data path on %s", kSpaceName[src], kSpaceName[dst], kArch);
}
template <class D, class S> inline void tmov(const Tile<D>& d, const Tile<S>& s, const char* site) {
    MoveTimer moving;
    check_path(s.space, d.space, site);
    if constexpr (is_same<D, fp8_e8m0>::value && is_same<S, uint8_t>::value) {
        same_valid(d, s, site);            // uint8 scales into the scale buffer: the same bits
        for (int64_t i = 0; i < d.vr; ++i)
            for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j].bits = s.row(i)[j];
    } else {
        tcvt(d, s, RM_RINT, site);
    }
}
// tmov {transpose = true}: the cube reads a mat tile transposed into left / right
template <class T> inline void tmov_transposed(const Tile<T>& d, const Tile<T>& s, const char* site) {
    MoveTimer moving;
    if (s.space != MAT || (d.space != LEFT && d.space != RIGHT))
        fail(site, "a transposed tmov reads mat into left or right, not %s -> %s", kSpaceName[s.space], kSpaceName[d.space]);
    if (d.vr != s.vc || d.vc != s.vr) fail(site, "transposed tmov of %dx%d needs a %dx%d result, got %dx%d", s.vr, s.vc, s.vc, s.vr, d.vr, d.vc);
    for (int64_t i = 0; i < s.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) d.row(j)[i] = s.row(i)[j];
}
template <class T> inline void ttrans(const Tile<T>& d, const Tile<T>& s, const char* site) {
    if (d.vr != s.vc || d.vc != s.vr) fail(site, "transpose of %dx%d needs a %dx%d result, got %dx%d", s.vr, s.vc, s.vc, s.vr, d.vr, d.vc);
    if (d.p == s.p && s.vr > 1 && s.vc > 1) fail(site, "transpose cannot run in place");
    for (int64_t i = 0; i < s.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) d.row(j)[i] = s.row(i)[j];
}

// ---------------------------------------------------------------- a Group's pipe
// The cube half and the vector half(s) of a mixed kernel (a Group) pass tiles through a
// pipe in memory the runtime gives each launch of the group (zeroed, its address a hidden
// argument). Words 0-2: slot bytes, slots per channel, a stop flag (a half that failed
// sets it, so the others do not wait for a tile that never comes). Then the channels --
// per pipe id, (to the AIVs, to the AIC) x (AIV 0, AIV 1) -- each a single-producer
// single-consumer ring: a 64-byte header and its slots, each a 64-byte header (valid rows,
// cols, element bytes) and the tile's valid part, packed. In a split group (1: up-down,
// 2: left-right) the cube sends each AIV its half of a tile and gathers their halves; an
// AIV (`who` >= 0) uses its own channels; without a split everything goes through AIV 0's.
// A channel's header: head (pushed), tail (freed), popped, and -- once a hand-written
// group's pl.*_initialize_pipe ran -- its declared slot bytes, depth and consumer buffer.
enum { TO_AIV = 0, TO_AIC = 1 };
constexpr int64_t kPipeHeader = 64, kChannelHeader = 64, kSlotHeader = 64, kChannelsPerId = 4;
enum { CH_HEAD = 0, CH_TAIL = 1, CH_POPPED = 2, CH_SLOT_BYTES = 3, CH_DEPTH = 4, CH_BUFFER = 5 };

inline int64_t* pipe_words(int64_t pipe, const char* site) {
    if (!pipe) fail(site, "this kernel half runs without its group's pipe (launch it as a Group)");
    return reinterpret_cast<int64_t*>(pipe);
}
inline int64_t pipe_ids(const int64_t* w) { return w[3] > 0 ? w[3] : 1; }
inline std::atomic<int64_t>* pipe_counter(int64_t* w, int ch, int which) {
    return reinterpret_cast<std::atomic<int64_t>*>(reinterpret_cast<char*>(w) + kPipeHeader +
                                                   ch * kChannelHeader + which * 8);
}
inline char* pipe_slot(int64_t* w, int ch, int64_t seq) {
    const int64_t bytes = w[0], depth = w[1];
    return reinterpret_cast<char*>(w) + kPipeHeader + pipe_ids(w) * kChannelsPerId * kChannelHeader +
           (ch * depth + seq % depth) * (kSlotHeader + bytes);
}
inline int channel_of(int64_t* w, int id, int dir, int lane, const char* site) {
    if (id < 0 || id >= pipe_ids(w)) fail(site, "pipe id %d: this group has pipes 0 to %lld", id, (long long)pipe_ids(w) - 1);
    return int(id * kChannelsPerId + dir * 2 + lane);
}
// a channel's depth: what its pl.*_initialize_pipe declared, else the pipe's
inline int64_t channel_depth(int64_t* w, int ch) {
    const int64_t d = pipe_counter(w, ch, CH_DEPTH)->load(std::memory_order_acquire);
    return d > 0 ? d : w[1];
}
inline int64_t channel_slot_bytes(int64_t* w, int ch) {
    const int64_t b = pipe_counter(w, ch, CH_SLOT_BYTES)->load(std::memory_order_acquire);
    return b > 0 ? b : w[0];
}
inline void pipe_stop(int64_t pipe) {
    if (pipe) reinterpret_cast<std::atomic<int64_t>*>(reinterpret_cast<int64_t*>(pipe) + 2)->store(1);
}
// wait until `ready` holds; a stopped group or 60 s without progress is an error
template <class F> inline void pipe_wait(int64_t* w, F ready, const char* what, const char* site) {
    auto* stop = reinterpret_cast<std::atomic<int64_t>*>(w + 2);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (int spins = 0; !ready(); ++spins) {
        if (stop->load()) fail<Stopped>(site, "%s: the other half of the group stopped", what);
        if (std::chrono::steady_clock::now() > until)
            fail(site, "%s: waited 60 s for the other half of the group", what);
        if (spins < 1000) std::this_thread::yield();
        else std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}
// a declared value both ends of a pipe give: the first sets it, the other must agree
inline void pipe_agree(int64_t* w, int ch, int which, int64_t value, const char* what, const char* site) {
    int64_t seen = 0;
    if (!pipe_counter(w, ch, which)->compare_exchange_strong(seen, value) && seen != value)
        fail(site, "pipe_init: the cube and the vector core declare different %s for a pipe (%lld and %lld)",
             what, (long long)seen, (long long)value);
}
// pl.aic_initialize_pipe / pl.aiv_initialize_pipe: each end of pipe `id` declares its slots
// (both must declare the same) and the consumer's slot buffer (a reserve_buffer base)
inline void pipe_init(int64_t pipe, int32_t c2v_buf, int32_t v2c_buf, int dir_mask, int64_t slot_bytes,
                      int64_t slots, int id, const char* site) {
    int64_t* w = pipe_words(pipe, site);
    if (slot_bytes > w[0])
        fail(site, "pipe_init: slots of %lld bytes; this group's pipe holds %lld", (long long)slot_bytes, (long long)w[0]);
    if (slots > w[1])
        fail(site, "pipe_init: %lld slots; this group's pipe holds %lld", (long long)slots, (long long)w[1]);
    for (int dir = 0; dir < 2; ++dir) {
        if (!(dir_mask & (dir == TO_AIV ? 1 : 2))) continue;
        for (int lane = 0; lane < 2; ++lane) {
            const int ch = channel_of(w, id, dir, lane, site);
            pipe_agree(w, ch, CH_SLOT_BYTES, slot_bytes, "slot sizes", site);
            pipe_agree(w, ch, CH_DEPTH, slots, "slot counts", site);
            pipe_agree(w, ch, CH_BUFFER, int64_t(dir == TO_AIV ? c2v_buf : v2c_buf) + 1, "consumer buffers", site);
        }
    }
}
// half `which` of a tile: its top/bottom rows (split 1) or left/right columns (split 2)
template <class T> inline Tile<T> pipe_half(const Tile<T>& t, int split, int which, const char* site) {
    Tile<T> h = t;
    if (split == 1) {
        if (t.vr % 2) fail(site, "an up-down split of a tile with %d valid rows", t.vr);
        h.vr = t.vr / 2;
        h.p = t.row(int64_t(which) * h.vr);
    } else {
        if (t.vc % 2) fail(site, "a left-right split of a tile with %d valid columns", t.vc);
        h.vc = t.vc / 2;
        h.p = t.p + int64_t(which) * h.vc;
    }
    return h;
}
// what a split group's cube sends each AIV of a tile narrower than its box (a valid part
// set with set_validshape), or split at a point other than the box's middle (`half`: a
// tensor's split point on the larger fractal box of its tile, or an odd box's ceil half):
// the valid part of that AIV's band [which * half, which * half + half) -- each AIV pops
// its localized extent, max(min(valid - which * half, half), 0)
template <class T> inline Tile<T> pipe_box_half(const Tile<T>& t, int split, int which, int32_t half,
                                                const char* site) {
    const bool by_rows = split == 1;
    const int32_t box = by_rows ? t.rows : t.cols, valid = by_rows ? t.vr : t.vc;
    if (half == 0 && valid == box) return pipe_half(t, split, which, site);
    if (half == 0) {
        if (box % 2) fail(site, "a %s split of a %dx%d tile", by_rows ? "up-down" : "left-right", t.rows, t.cols);
        half = box / 2;
    }
    if (half < 0 || half > box || valid > 2 * half)
        fail(site, "a %s split at %d of a %dx%d tile with %d valid", by_rows ? "up-down" : "left-right", half,
             t.rows, t.cols, valid);
    const int32_t rest = valid - which * half;
    Tile<T> h = t;
    const int32_t mine = rest < 0 ? 0 : (rest > half ? half : rest);
    if (by_rows) {
        h.vr = mine;
        h.p = t.row(int64_t(which) * half);
    } else {
        h.vc = mine;
        h.p = t.p + int64_t(which) * half;
    }
    return h;
}
template <class T> inline void pipe_send(int64_t* w, int ch, const Tile<T>& t, const char* site) {
    const int64_t bytes = int64_t(t.vr) * t.vc * int64_t(sizeof(T)), room = channel_slot_bytes(w, ch);
    if (bytes > room) fail(site, "tpush of %lld bytes: the pipe's slots hold %lld", (long long)bytes, (long long)room);
    auto* head = pipe_counter(w, ch, CH_HEAD);
    auto* tail = pipe_counter(w, ch, CH_TAIL);
    const int64_t seq = head->load(std::memory_order_relaxed);
    pipe_wait(w, [&] { return seq - tail->load(std::memory_order_acquire) < channel_depth(w, ch); }, "tpush", site);
    char* slot = pipe_slot(w, ch, seq);
    int32_t* hdr = reinterpret_cast<int32_t*>(slot);
    hdr[0] = t.vr; hdr[1] = t.vc; hdr[2] = int32_t(sizeof(T));
    T* out = reinterpret_cast<T*>(slot + kSlotHeader);
    for (int64_t i = 0; i < t.vr; ++i) std::memcpy(out + i * t.vc, t.row(i), size_t(t.vc) * sizeof(T));
    head->store(seq + 1, std::memory_order_release);
}
// a pop takes the next full slot; unless it is held (a tfree frees it later) the slot is
// free at once
template <class T> inline void pipe_receive(int64_t* w, int ch, const Tile<T>& d, bool hold, const char* site) {
    auto* head = pipe_counter(w, ch, CH_HEAD);
    auto* popped = pipe_counter(w, ch, CH_POPPED);
    const int64_t seq = popped->load(std::memory_order_relaxed);
    pipe_wait(w, [&] { return head->load(std::memory_order_acquire) > seq; }, "tpop", site);
    const char* slot = pipe_slot(w, ch, seq);
    const int32_t* hdr = reinterpret_cast<const int32_t*>(slot);
    // the popped tile holds what was pushed, and its valid part (what the consumer declares:
    // possibly less) lies inside it
    if (hdr[0] < d.vr || hdr[1] < d.vc || hdr[0] > d.rows || hdr[1] > d.cols || hdr[2] != int32_t(sizeof(T)))
        fail(site, "tpop into a %dx%d tile of %d-byte elements: the other half pushed %dx%d of %d-byte elements",
             d.vr, d.vc, int(sizeof(T)), hdr[0], hdr[1], hdr[2]);
    const T* in = reinterpret_cast<const T*>(slot + kSlotHeader);
    for (int64_t i = 0; i < d.vr; ++i) std::memcpy(d.row(i), in + i * hdr[1], size_t(d.vc) * sizeof(T));
    popped->store(seq + 1, std::memory_order_relaxed);
    if (!hold) pipe_counter(w, ch, CH_TAIL)->store(seq + 1, std::memory_order_release);
}
inline void pipe_free(int64_t* w, int ch, const char* site) {
    auto* tail = pipe_counter(w, ch, CH_TAIL);
    const int64_t t = tail->load(std::memory_order_relaxed);
    if (t >= pipe_counter(w, ch, CH_POPPED)->load(std::memory_order_relaxed))
        fail(site, "tfree of a slot this core has not popped (more tfrees than tpops on the pipe)");
    tail->store(t + 1, std::memory_order_release);
}
// the channel(s) and tile (half) a push or pop moves: the cube of a split group moves each
// AIV's half on that AIV's channel (split 1, 2), or the whole tile on both when both AIVs
// run unsplit (3: each gets it, and of what both send the cube keeps the last); otherwise
// the whole tile on the caller's channel
template <class T, class F>
inline void pipe_each(int64_t* w, int id, int dir, int split, int32_t who, const Tile<T>& t, const char* site, F move,
                      int32_t half = 0) {
    if (split == 3 && who < 0) {
        for (int h = 0; h < 2; ++h) move(channel_of(w, id, dir, h, site), t);
    } else if (split == 3) {
        move(channel_of(w, id, dir, who, site), t);
    } else if (split && who < 0) {
        for (int h = 0; h < 2; ++h)
            move(channel_of(w, id, dir, h, site),
                 dir == TO_AIV ? pipe_box_half(t, split, h, half, site) : pipe_half(t, split, h, site));
    } else {
        move(channel_of(w, id, dir, who < 0 ? 0 : who, site), t);
    }
}
template <class T>
inline void tpush(int64_t pipe, int dir, int split, int32_t who, const Tile<T>& t, const char* site, int id = 0,
                  int32_t half = 0) {
    MoveTimer moving;
    int64_t* w = pipe_words(pipe, site);
    pipe_each(w, id, dir, split, who, t, site, [&](int ch, const Tile<T>& part) { pipe_send(w, ch, part, site); },
              half);
}
template <class T>
inline void tpop(int64_t pipe, int dir, int split, int32_t who, const Tile<T>& d, const char* site, int id = 0,
                 bool hold = false) {
    MoveTimer moving;
    int64_t* w = pipe_words(pipe, site);
    pipe_each(w, id, dir, split, who, d, site,
              [&](int ch, const Tile<T>& part) { pipe_receive(w, ch, part, hold, site); });
}
// pl.tfree_to_aiv / pl.tfree_to_aic: the popped slot(s) of this pipe are free again
inline void tfree(int64_t pipe, int dir, int split, int32_t who, int id, const char* site) {
    int64_t* w = pipe_words(pipe, site);
    if (split == 3 && who < 0) {
        for (int h = 0; h < 2; ++h) pipe_free(w, channel_of(w, id, dir, h, site), site);
    } else if (split && split != 3 && who < 0) {
        for (int h = 0; h < 2; ++h) pipe_free(w, channel_of(w, id, dir, h, site), site);
    } else {
        pipe_free(w, channel_of(w, id, dir, who < 0 ? 0 : who, site), site);
    }
}

// ---------------------------------------------------------------- cross-core events
// pl.system.sync_set / sync_wait: each event id is a counter on every core of the group;
// a wait blocks until its core's counter is positive and takes one off. They live after
// the pipe's slots, 8 words per event: the mode-2 sets of AIV 0 and AIV 1 (the AIC's
// counter rises once both lanes have set), the AIC's waits, the AIC's mode-2 sets (on both
// AIVs at once), the mode-1 sets of AIV 0 and 1 (on both AIVs once both set), and AIV 0's
// and AIV 1's waits. Header word 4: how many AIVs the group runs (one lane counts alone).
constexpr int kEvents = 16, kEventWords = 8, kEventMax = 15;
enum { EV_V2C0 = 0, EV_V2C1 = 1, EV_AIC_WAITS = 2, EV_C2V = 3, EV_M1_0 = 4, EV_M1_1 = 5, EV_AIV_WAITS = 6 };
inline std::atomic<int64_t>* event_word(int64_t* w, int ev, int k) {
    const int64_t ch = pipe_ids(w) * kChannelsPerId;
    char* events = reinterpret_cast<char*>(w) + kPipeHeader + ch * kChannelHeader + ch * w[1] * (kSlotHeader + w[0]);
    return reinterpret_cast<std::atomic<int64_t>*>(events) + ev * kEventWords + k;
}
inline int64_t both_lanes(int64_t* w, int ev, int first) {
    const int64_t a = event_word(w, ev, first)->load(std::memory_order_acquire);
    if (w[4] < 2) return a;
    const int64_t b = event_word(w, ev, first + 1)->load(std::memory_order_acquire);
    return a < b ? a : b;
}
// what a core's counter holds: the sets that reached it, less its waits (lane -1: the AIC)
inline int64_t event_count(int64_t* w, int ev, int32_t lane) {
    if (lane < 0) return both_lanes(w, ev, EV_V2C0) - event_word(w, ev, EV_AIC_WAITS)->load();
    return event_word(w, ev, EV_C2V)->load(std::memory_order_acquire) + both_lanes(w, ev, EV_M1_0) -
           event_word(w, ev, EV_AIV_WAITS + lane)->load();
}
inline int64_t* event_pipe(int64_t pipe, int32_t ev, int32_t lane, const char* site) {
    int64_t* w = pipe_words(pipe, site);
    if (ev < 0 || ev >= kEvents) fail(site, "event id %d: ids are 0 to %d", int(ev), kEvents - 1);
    if (lane >= (w[4] > 0 ? w[4] : 1)) fail(site, "AIV lane %d: this group runs %lld", int(lane), (long long)w[4]);
    return w;
}
inline void set_ffts(const GmArg<int64_t>& ws, int64_t need, const char* site) {
    int64_t n = 1;
    for (int i = 0; i < ws.ndims; ++i) n *= ws.shape[i];
    if (n < need) fail(site, "set_ffts: the FFTS workspace holds %lld INT64 elements, it needs %lld", (long long)n, (long long)need);
}
inline void sync_set(int64_t pipe, int32_t lane, int32_t ev, int mode, const char* site) {
    int64_t* w = event_pipe(pipe, ev, lane, site);
    if (mode == 1 && lane < 0) fail(site, "sync_set: ffts_mode 1 is an event between the AIVs; the AIC cannot raise it");
    const int k = lane < 0 ? EV_C2V : (mode == 1 ? EV_M1_0 : EV_V2C0) + lane;
    event_word(w, ev, k)->fetch_add(1, std::memory_order_acq_rel);
    // the cores it reaches must not hold more than the counter's 15
    const bool over = (lane < 0 || mode == 1) ? (event_count(w, ev, 0) > kEventMax ||
                                                 (w[4] > 1 && event_count(w, ev, 1) > kEventMax))
                                              : event_count(w, ev, -1) > kEventMax;
    if (over) fail(site, "sync_set: event %d raised %d times with no wait taking it (a counter holds %d)",
                   int(ev), kEventMax + 1, kEventMax);
}
inline void sync_wait(int64_t pipe, int32_t lane, int32_t ev, const char* site) {
    int64_t* w = event_pipe(pipe, ev, lane, site);
    char what[96];
    if (lane < 0) std::snprintf(what, sizeof what, "sync_wait on event %d (the AIC)", int(ev));
    else std::snprintf(what, sizeof what, "sync_wait on event %d (AIV %d)", int(ev), int(lane));
    pipe_wait(w, [&] { return event_count(w, ev, lane) > 0; }, what, site);
    event_word(w, ev, lane < 0 ? EV_AIC_WAITS : EV_AIV_WAITS + lane)->fetch_add(1, std::memory_order_acq_rel);
}

// ---------------------------------------------------------------- GM <-> tile
template <class T, class G> inline void check_part(const Tile<T>& t, const GmPart<G>& p, const char* site) {
    p.check_bounds(site);
    if (p.rows() != t.vr || p.cols() != t.vc)
        fail(site, "partition %lldx%lld does not match the tile's valid shape %dx%d", (long long)p.rows(),
             (long long)p.cols(), t.vr, t.vc);
}
template <class T> inline void tload(const Tile<T>& d, const GmPart<T>& p, const char* site) {
    MoveTimer moving;
    if (d.space != VEC && d.space != MAT) fail(site, "GM loads go into vec or mat, not %s", kSpaceName[d.space]);
    check_part(d, p, site);
    if (p.layout != GM_STRIDED) {
        for (int64_t i = 0; i < d.vr; ++i)
            for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = *p.mx_at(i, j);
        return;
    }
    const int64_t cs = p.col_stride();
    for (int64_t i = 0; i < d.vr; ++i) {
        const T* src = p.base + p.row_offset(i);
        T* dr = d.row(i);
        if (cs == 1) std::memcpy(dr, src, size_t(d.vc) * sizeof(T));
        else for (int64_t j = 0; j < d.vc; ++j) dr[j] = src[j * cs];
    }
}
// From vec the dtypes match; from acc the fix-pipe converts (f32 -> f16/bf16, ...).
template <class G, class T> inline void tstore(const GmPart<G>& p, const Tile<T>& s, const char* site) {
    MoveTimer moving;
    if (s.space != VEC && s.space != ACC) fail(site, "GM stores come from vec or acc, not %s", kSpaceName[s.space]);
    check_part(s, p, site);
    if (p.layout != GM_STRIDED) {
        for (int64_t i = 0; i < s.vr; ++i)
            for (int64_t j = 0; j < s.vc; ++j) *p.mx_at(i, j) = convert<G>(s.row(i)[j], RM_RINT);
        return;
    }
    const int64_t cs = p.col_stride();
    for (int64_t i = 0; i < s.vr; ++i) {
        G* dst = p.base + p.row_offset(i);
        const T* sr = s.row(i);
        if constexpr (is_same<G, T>::value) {
            if (cs == 1) {
                std::memcpy(dst, sr, size_t(s.vc) * sizeof(T));
                continue;
            }
        }
        for (int64_t j = 0; j < s.vc; ++j) dst[j * cs] = convert<G>(sr[j], RM_RINT);
    }
}

// GM forwarding (ptoas's forward.py): a loaded tile that only the next few ops read, with
// nothing writing GM meanwhile, reads the partition in place; a tile computed only for the
// tstore after it is computed into the partition. Both need a window: a row-major partition
// (unit column step, its rows at one stride) in bounds and of the tile's valid shape. Without
// one the copy is made as written (and reports what is wrong with it).
constexpr int64_t kGmWindow = -1;                  // the addr of a tile that is a window onto GM
template <class T> inline bool gm_window(const Tile<T>& t, const GmPart<T>& p, Tile<T>& w) {
    if (p.layout != GM_STRIDED || p.rank < 1 || p.col_stride() != 1 || t.vr < 1 || t.vc < 1) return false;
    if (p.rows() != t.vr || p.cols() != t.vc || p.outside_dim() >= 0) return false;
    const int64_t stride = t.vr > 1 ? p.row_offset(1) : t.vc;
    if (stride < t.vc || stride > std::numeric_limits<int32_t>::max()) return false;
    if (p.rank > 2)
        for (int64_t i = 2; i < t.vr; ++i)
            if (p.row_offset(i) != i * stride) return false;
    w = t;
    w.p = p.base;
    w.stride = int32_t(stride);
    w.addr = kGmWindow;
    return true;
}
template <class T> inline Tile<T> tload_view(const Tile<T>& d, const GmPart<T>& p, const char* site) {
    Tile<T> w;
    if ((d.space == VEC || d.space == MAT) && gm_window(d, p, w)) return w;
    tload(d, p, site);
    return d;
}
template <class S> inline bool gm_disjoint(const Tile<S>& s, uintptr_t lo, uintptr_t hi) {
    if (s.addr != kGmWindow) return true;
    const uintptr_t a = reinterpret_cast<uintptr_t>(s.p), b = reinterpret_cast<uintptr_t>(s.row(s.vr - 1) + s.vc);
    return b <= lo || hi <= a;
}
// The tile an op computing t for tstore(p, t) writes: the partition when the op reads no GM
// it would write, else t (and the tstore copies it).
template <class T, class... S> inline Tile<T> store_target(const GmPart<T>& p, const Tile<T>& t, const S&... srcs) {
    Tile<T> w;
    if (t.space != VEC || !gm_window(t, p, w)) return t;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(w.p), hi = reinterpret_cast<uintptr_t>(w.row(w.vr - 1) + w.vc);
    return (gm_disjoint(srcs, lo, hi) && ...) ? w : t;
}

// tstore with atomicType = atomic_add: each element is added into GM in the GM dtype
// (from acc, after the fix-pipe conversion). Kernels of a parallel loop run on several
// threads and may add into one window: every element is a compare-and-swap on its bits,
// atomic across threads and across kernel libraries.
template <class G> inline void atomic_add_elem(G* p, G v) {
    using U = typename pick<sizeof(G) == 1, uint8_t,
              typename pick<sizeof(G) == 2, uint16_t,
              typename pick<sizeof(G) == 4, uint32_t, uint64_t>::type>::type>::type;
    static_assert(sizeof(U) == sizeof(G), "atomic add of an odd-sized element");
    U* bits = reinterpret_cast<U*>(p);
    U old = __atomic_load_n(bits, __ATOMIC_RELAXED);
    for (;;) {
        G cur;
        std::memcpy(&cur, &old, sizeof(G));
        const G sum = convert<G>(calc_t<G>(calc_t<G>(cur) + calc_t<G>(v)), RM_RINT);
        U next;
        std::memcpy(&next, &sum, sizeof(G));
        if (__atomic_compare_exchange_n(bits, &old, next, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
    }
}
template <class G, class T> inline void tstore_add(const GmPart<G>& p, const Tile<T>& s, const char* site) {
    p.strided_only("an atomic-add store", site);
    MoveTimer moving;
    if (s.space != VEC && s.space != ACC) fail(site, "GM stores come from vec or acc, not %s", kSpaceName[s.space]);
    check_part(s, p, site);
    const int64_t cs = p.col_stride();
    for (int64_t i = 0; i < s.vr; ++i) {
        G* dst = p.base + p.row_offset(i);
        const T* sr = s.row(i);
        for (int64_t j = 0; j < s.vc; ++j) atomic_add_elem(dst + j * cs, convert<G>(sr[j], RM_RINT));
    }
}

// pto.textract: the window of s at (r, c), as large as d, copied into d.
template <class T>
inline void textract(const Tile<T>& d, const Tile<T>& s, int64_t r, int64_t c, const char* site) {
    MoveTimer moving;
    if (r < 0 || c < 0 || r + d.rows > s.rows || c + d.cols > s.cols)
        fail(site, "textract window [%lld, %lld) x [%lld, %lld) lies outside the %dx%d source", (long long)r,
             (long long)(r + d.rows), (long long)c, (long long)(c + d.cols), s.rows, s.cols);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = s.row(r + i)[c + j];
}

// pto.textract {transpose = true}: the (d.cols x d.rows) window of s at (r, c), transposed
// into d (the cube reading a mat window as its b_trans operand)
template <class T>
inline void textract_transposed(const Tile<T>& d, const Tile<T>& s, int64_t r, int64_t c, const char* site) {
    MoveTimer moving;
    if (r < 0 || c < 0 || r + d.cols > s.rows || c + d.rows > s.cols)
        fail(site, "transposed textract window [%lld, %lld) x [%lld, %lld) lies outside the %dx%d source",
             (long long)r, (long long)(r + d.cols), (long long)c, (long long)(c + d.rows), s.rows, s.cols);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) d.row(i)[j] = s.row(r + j)[c + i];
}

// ---------------------------------------------------------------- partial ops, prelu
// pto.tpart*: over a's valid region, f(a, b) where b is valid too, a elsewhere.
template <class T, class F> inline void part(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, F f, const char* site) {
    same_valid(d, a, site);
    using C = calc_t<T>;
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j)
            d.row(i)[j] = (i < b.vr && j < b.vc) ? T(f(C(a.row(i)[j]), C(b.row(i)[j]))) : a.row(i)[j];
}
template <class T> inline void tpartadd(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* s) { part(d, a, b, [](auto x, auto y) { return x + y; }, s); }
template <class T> inline void tpartmul(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* s) { part(d, a, b, [](auto x, auto y) { return x * y; }, s); }
template <class T> inline void tpartmax(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* s) { part(d, a, b, [](auto x, auto y) { return x > y ? x : y; }, s); }
template <class T> inline void tpartmin(const Tile<T>& d, const Tile<T>& a, const Tile<T>& b, const char* s) { part(d, a, b, [](auto x, auto y) { return x < y ? x : y; }, s); }
// pto.tprelu: x where x > 0, slope * x elsewhere, the slope per element.
template <class T> inline void tprelu(const Tile<T>& d, const Tile<T>& a, const Tile<T>& slope, const char* site) {
    map2(d, a, slope, B_FULL, [](auto x, auto y) { return x > decltype(x)(0) ? x : decltype(x)(x * y); }, site);
}

// ---------------------------------------------------------------- random
// pto.trandom: Philox4x32 (7 or 10 rounds) keyed by (k0, k1); element p of the valid
// region (row-major) is word p % 4 of the block for counter (c0..c3) + p / 4. The same
// seeds give the same tile. (The hardware's lane schedule is its own; this is the
// standard generator, not a bit-exact model of it.)
inline void philox4x32(uint32_t c[4], uint32_t k0, uint32_t k1, int rounds) {
    for (int r = 0; r < rounds; ++r) {
        const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
        const uint32_t n0 = uint32_t(p1 >> 32) ^ c[1] ^ k0, n2 = uint32_t(p0 >> 32) ^ c[3] ^ k1;
        c[1] = uint32_t(p1);
        c[3] = uint32_t(p0);
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}
template <class T>
inline void trandom(const Tile<T>& d, int32_t k0, int32_t k1, int32_t c0, int32_t c1, int32_t c2, int32_t c3,
                    int rounds, const char* site) {
    static_assert(sizeof(T) == 4, "trandom fills 32-bit words");
    if (rounds != 7 && rounds != 10) fail(site, "trandom runs 7 or 10 rounds, not %d", rounds);
    uint32_t block[4] = {0, 0, 0, 0};
    int64_t have = -1;                          // the counter offset of `block`
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) {
            const int64_t p = i * d.vc + j;
            if (p / 4 != have) {
                have = p / 4;
                // counter + p / 4, as a 128-bit number (carries into the higher words)
                uint64_t lo = uint64_t(uint32_t(c0)) + uint64_t(have);
                uint64_t w1 = uint64_t(uint32_t(c1)) + (lo >> 32);
                uint64_t w2 = uint64_t(uint32_t(c2)) + (w1 >> 32);
                block[0] = uint32_t(lo);
                block[1] = uint32_t(w1);
                block[2] = uint32_t(w2);
                block[3] = uint32_t(c3) + uint32_t(w2 >> 32);
                philox4x32(block, uint32_t(k0), uint32_t(k1), rounds);
            }
            std::memcpy(&d.row(i)[j], &block[p % 4], 4);
        }
}

// ---------------------------------------------------------------- gather
// pto.tgather, index form: d[i, j] = the element of s at row-major position idx[i, j].
template <class T, class I>
inline void tgather(const Tile<T>& d, const Tile<T>& s, const Tile<I>& idx, const char* site) {
    if (d.vr != idx.vr || d.vc != idx.vc)
        fail(site, "tgather's result %dx%d is not shaped like its indices %dx%d", d.vr, d.vc, idx.vr, idx.vc);
    const int64_t n = int64_t(s.rows) * s.cols;
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) {
            const int64_t f = int64_t(idx.row(i)[j]);
            if (f < 0 || f >= n) fail(site, "gather index %lld at [%lld, %lld] is outside the %dx%d source",
                                      (long long)f, (long long)i, (long long)j, s.rows, s.cols);
            d.row(i)[j] = s.row(f / s.cols)[f % s.cols];
        }
}
// pto.tgather, mask form: the columns pattern keeps of each row (1..7 = P0101, P1010, P0001,
// P0010, P0100, P1000, P1111), packed; the bits are copied (the result may be read as
// another dtype of the same width).
template <class D, class S>
inline void tgather_mask(const Tile<D>& d, const Tile<S>& s, int pattern, const char* site) {
    static_assert(sizeof(D) == sizeof(S), "a mask gather keeps the element width");
    static const int kStride[] = {0, 2, 2, 4, 4, 4, 4, 1}, kFirst[] = {0, 0, 1, 0, 1, 2, 3, 0};
    if (pattern < 1 || pattern > 7) fail(site, "mask pattern %d is not one of 1..7", pattern);
    const int stride = kStride[pattern], first = kFirst[pattern];
    if (d.vr != s.vr || int64_t(d.vc) * stride != s.vc)
        fail(site, "tgather mask: %dx%d keeps %dx%d, not %dx%d", s.vr, s.vc, s.vr, s.vc / stride, d.vr, d.vc);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) std::memcpy(&d.row(i)[j], &s.row(i)[j * stride + first], sizeof(D));
}

// pto.tgather, compare form: per valid row i of s, the column indices j (+ offset) of the
// elements with cmp(s[i, j], k) true, ascending, into d[i, 0..K) (the first K of them; slots
// past the matches are 0), and the number of matches into c[0, i].
template <class T, class C, class S>
inline void tgather_cmp(const Tile<int32_t>& d, const Tile<C>& c, const Tile<T>& s, S k, int t, int64_t offset,
                        const char* site) {
    if (d.vr < s.vr || c.vc < s.vr)
        fail(site, "tgather compare over %d rows: indices %dx%d, counts %dx%d", s.vr, d.vr, d.vc, c.vr, c.vc);
    using V = calc_t<T>;
    const V y = V(k);
    for (int64_t i = 0; i < s.vr; ++i) {
        int32_t* out = d.row(i);
        int64_t n = 0;
        for (int64_t j = 0; j < d.vc; ++j) out[j] = 0;
        for (int64_t j = 0; j < s.vc; ++j)
            if (cmp_(V(s.row(i)[j]), y, t)) {
                if (n < d.vc) out[n] = int32_t(j + offset);
                ++n;
            }
        c.row(0)[i] = C(n);
    }
}

// ---------------------------------------------------------------- on-core arrays
// pto.declare_local_array: a kernel's stack-local array of N scalars (zeros), read and
// written an element at a time, each index checked.
template <class T, int N> struct LocalArray {
    T v[N];
    T get(int64_t i, const char* site) const {
        if (i < 0 || i >= N) fail(site, "local array index %lld is outside its %d elements", (long long)i, N);
        return v[i];
    }
    void set(int64_t i, T x, const char* site) {
        if (i < 0 || i >= N) fail(site, "local array index %lld is outside its %d elements", (long long)i, N);
        v[i] = x;
    }
};

// ---------------------------------------------------------------- sort
// A sorted element is a (value, index) pair: two f32 columns, the index's 32 bits in the
// second. Order: descending by value; equal values keep their order (stable).
// (no <vector> / <algorithm>: every kernel includes this header, and they cost it compile time)
struct SortPair { float v; uint32_t i; };
struct SortPairs {                  // a row's pairs, freed with the scope
    SortPair* p;
    explicit SortPairs(int64_t n) : p(new SortPair[n > 0 ? n : 1]) {}
    ~SortPairs() { delete[] p; }
    SortPairs(const SortPairs&) = delete;
    SortPairs& operator=(const SortPairs&) = delete;
    SortPair& operator[](int64_t k) const { return p[k]; }
};
inline SortPair pair_at(const float* row, int64_t k) {
    SortPair p; p.v = row[2 * k]; std::memcpy(&p.i, &row[2 * k + 1], 4); return p;
}
inline void put_pair(float* row, int64_t k, const SortPair& p) {
    row[2 * k] = p.v; std::memcpy(&row[2 * k + 1], &p.i, 4);
}
// Merge sorted runs [first, first+len) of `in` (in pairs) into `out` from `at`; with
// `exhausted`, stop when one run runs out. Returns the pairs written.
inline int64_t merge_runs(const SortPairs& in, const int64_t* first, const int64_t* len, int n,
                          bool exhausted, SortPair* out) {
    int64_t pos[4] = {0, 0, 0, 0}, w = 0;
    for (;;) {
        int best = -1;
        bool done = false;
        for (int r = 0; r < n; ++r) {
            if (pos[r] == len[r]) { done = done || exhausted; continue; }
            if (best < 0 || in[first[r] + pos[r]].v > in[first[best] + pos[best]].v) best = r;
        }
        if (best < 0 || done) return w;
        out[w++] = in[first[best] + pos[best]++];
    }
}
// pto.tsort32 ins(src, idx) outs(dst): each 32-element block of a row sorted descending,
// the values with their indices, into [R, 2C] pairs.
template <class I>
inline void tsort32(const Tile<float>& d, const Tile<float>& s, const Tile<I>& idx, const char* site) {
    static_assert(sizeof(I) == 4, "sort32 indices are 32-bit");
    same_valid(s, idx, site);
    if (s.vc % 32) fail(site, "tsort32 sorts blocks of 32: %d valid columns", s.vc);
    if (d.vr != s.vr || d.vc != 2 * s.vc) fail(site, "tsort32's result must be %dx%d, got %dx%d", s.vr, 2 * s.vc, d.vr, d.vc);
    SortPairs row(s.vc);
    for (int64_t i = 0; i < s.vr; ++i) {
        for (int64_t j = 0; j < s.vc; ++j) { row[j].v = s.row(i)[j]; std::memcpy(&row[j].i, &idx.row(i)[j], 4); }
        for (int64_t b = 0; b < s.vc; b += 32)         // insertion sort of a block: stable
            for (int64_t j = b + 1; j < b + 32; ++j) {
                const SortPair x = row[j];
                int64_t k = j;
                for (; k > b && row[k - 1].v < x.v; --k) row[k] = row[k - 1];
                row[k] = x;
            }
        for (int64_t j = 0; j < s.vc; ++j) put_pair(d.row(i), j, row[j]);
    }
}
// pto.tmrgsort format 1 ins(src, block_len) outs(dst): a row's sorted runs of block_len
// columns merged four by four (the last group may hold fewer).
inline void tmrgsort_runs(const Tile<float>& d, const Tile<float>& s, int32_t block_len, const char* site) {
    if (block_len <= 0 || block_len % 64) fail(site, "tmrgsort's run length %d is not a positive multiple of 64", block_len);
    same_valid(d, s, site);
    const int64_t pairs = s.vc / 2, run = block_len / 2;
    SortPairs in(pairs), out(pairs);
    for (int64_t i = 0; i < s.vr; ++i) {
        for (int64_t k = 0; k < pairs; ++k) in[k] = pair_at(s.row(i), k);
        for (int64_t g = 0; g < pairs; g += 4 * run) {
            int64_t first[4], len[4];
            int n = 0;
            for (; n < 4 && g + n * run < pairs; ++n) {
                first[n] = g + n * run;
                len[n] = run < pairs - first[n] ? run : pairs - first[n];
            }
            merge_runs(in, first, len, n, false, out.p + g);
        }
        for (int64_t k = 0; k < pairs; ++k) put_pair(d.row(i), k, out[k]);
    }
}
// pto.tmrgsort format 2 ins(s0, s1[, s2, s3], tmp {exhausted}) outs(dst, status): n sorted
// lists of a row merged into the row of dst; with exhausted, the merge stops when one
// list runs out (the rest of the row is left as it was).
inline void tmrgsort(const Tile<float>& d, const Tile<float>& s0, const Tile<float>& s1, const Tile<float>& s2,
                     const Tile<float>& s3, int n, int exhausted, const char* site) {
    const Tile<float>* lists[4] = {&s0, &s1, &s2, &s3};
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
        if (lists[r]->vr != d.vr) fail(site, "tmrgsort: list %d has %d rows, the result %d", r, lists[r]->vr, d.vr);
        total += lists[r]->vc;
    }
    if (total != d.vc) fail(site, "tmrgsort: %lld columns of lists into %d", (long long)total, d.vc);
    SortPairs in(total / 2), out(total / 2);
    for (int64_t i = 0; i < d.vr; ++i) {
        int64_t first[4], len[4], at = 0;
        for (int r = 0; r < n; ++r) {
            first[r] = at;
            len[r] = lists[r]->vc / 2;
            for (int64_t k = 0; k < len[r]; ++k) in[at + k] = pair_at(lists[r]->row(i), k);
            at += len[r];
        }
        const int64_t w = merge_runs(in, first, len, n, exhausted != 0, out.p);
        for (int64_t k = 0; k < w; ++k) put_pair(d.row(i), k, out[k]);
    }
}

// pto.tscatter, index form: s[i, j] written at d's row-major position idx[i, j].
template <class T, class I>
inline void tscatter(const Tile<T>& d, const Tile<T>& s, const Tile<I>& idx, const char* site) {
    same_valid(s, idx, site);
    const int64_t n = int64_t(d.rows) * d.cols;
    for (int64_t i = 0; i < s.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) {
            const int64_t f = int64_t(idx.row(i)[j]);
            if (f < 0 || f >= n) fail(site, "scatter index %lld at [%lld, %lld] is outside the %dx%d tile",
                                      (long long)f, (long long)i, (long long)j, d.rows, d.cols);
            d.row(f / d.cols)[f % d.cols] = s.row(i)[j];
        }
}
// pto.tscatter, mask form: zeros, and s's columns at the columns the pattern marks.
template <class D, class S>
inline void tscatter_mask(const Tile<D>& d, const Tile<S>& s, int pattern, const char* site) {
    static_assert(sizeof(D) == sizeof(S), "a mask scatter keeps the element width");
    static const int kStride[] = {0, 2, 2, 4, 4, 4, 4, 1}, kFirst[] = {0, 0, 1, 0, 1, 2, 3, 0};
    if (pattern < 1 || pattern > 7) fail(site, "mask pattern %d is not one of 1..7", pattern);
    const int stride = kStride[pattern], first = kFirst[pattern];
    if (d.vr != s.vr || int64_t(s.vc) * stride != d.vc)
        fail(site, "tscatter mask: %dx%d does not spread over %dx%d", s.vr, s.vc, d.vr, d.vc);
    for (int64_t i = 0; i < d.vr; ++i) {
        std::memset(d.row(i), 0, size_t(d.vc) * sizeof(D));
        for (int64_t j = 0; j < s.vc; ++j) std::memcpy(&d.row(i)[j * stride + first], &s.row(i)[j], sizeof(D));
    }
}
// pto.tgatherb: block b of row i of d is the 32 bytes at byte offset off[i, b] into s.
template <class D, class S, class O>
inline void tgatherb(const Tile<D>& d, const Tile<S>& s, const Tile<O>& off, const char* site) {
    static_assert(sizeof(O) == 4, "tgatherb offsets are 32-bit");
    const int64_t per = 32 / int64_t(sizeof(D)), bytes = int64_t(s.rows) * s.stride * int64_t(sizeof(S));
    if (d.vr != off.vr || d.vc != off.vc * per)
        fail(site, "tgatherb: %dx%d offsets fill %dx%lld, the result is %dx%d", off.vr, off.vc, off.vr,
             (long long)(off.vc * per), d.vr, d.vc);
    const unsigned char* base = reinterpret_cast<const unsigned char*>(s.p);
    for (int64_t i = 0; i < off.vr; ++i)
        for (int64_t b = 0; b < off.vc; ++b) {
            const int64_t o = int64_t(uint32_t(off.row(i)[b]));
            if (o + 32 > bytes)
                fail(site, "tgatherb offset %lld at [%lld, %lld]: its 32 bytes are outside the %lld-byte source",
                     (long long)o, (long long)i, (long long)b, (long long)bytes);
            std::memcpy(&d.row(i)[b * per], base + o, 32);
        }
}
// pto.mgather: rows of the tensor (elem = 0: idx [1, R] or [R, 1] picks rows, the leading
// dims merged) or its elements (elem = 1: d[i, j] = element idx[i, j]); oob 0 (undefined:
// refused here), 1 clamp, 2 wrap, 3 zero. Indices are read as unsigned 32-bit values (as
// the hardware does: -1 is past the end). Only d's valid part is gathered.
template <class T, class G, class I>
inline void mgather(const Tile<T>& d, const GmPart<G>& p, const Tile<I>& idx, int elem, int oob, const char* site) {
    p.strided_only("mgather", site);
    MoveTimer moving;
    p.check_bounds(site);
    int64_t total = 1;
    for (int i = 0; i < p.rank; ++i) total *= p.size[i];
    const int64_t cols = p.cols(), n = elem ? total : total / cols;
    auto pick = [&](int64_t raw, int64_t i, int64_t j, bool* zero) -> int64_t {
        *zero = false;
        const int64_t f = int64_t(uint32_t(raw));
        if (f < n) return f;
        if (oob == 1) return n - 1;
        if (oob == 2) return f % n;
        if (oob == 3) { *zero = true; return 0; }
        fail(site, "mgather index %lld at [%lld, %lld] is outside the tensor's %lld %s", (long long)f,
             (long long)i, (long long)j, (long long)n, elem ? "elements" : "rows");
        return 0;
    };
    bool zero;
    if (elem) {
        if (d.vr > idx.vr || d.vc > idx.vc) same_valid(d, idx, site);
        for (int64_t i = 0; i < d.vr; ++i)
            for (int64_t j = 0; j < d.vc; ++j) {
                const int64_t f = pick(int64_t(idx.row(i)[j]), i, j, &zero);
                d.row(i)[j] = zero ? T{} : T(p.base[p.row_offset(f / cols) + (f % cols) * p.col_stride()]);
            }
        return;
    }
    const bool one_row = idx.rows == 1;
    const int64_t r = one_row ? idx.vc : idx.vr;
    if (d.vr > r || d.vc > cols) fail(site, "mgather (row) fills %lldx%lld, the result is %dx%d", (long long)r, (long long)cols, d.vr, d.vc);
    for (int64_t k = 0; k < d.vr; ++k) {
        const int64_t f = pick(int64_t(one_row ? idx.row(0)[k] : idx.row(k)[0]), one_row ? 0 : k, one_row ? k : 0, &zero);
        for (int64_t j = 0; j < d.vc; ++j)
            d.row(k)[j] = zero ? T{} : T(p.base[p.row_offset(f) + j * p.col_stride()]);
    }
}
// pto.mgather into mat: the indices come from GM (a whole contiguous tensor seen as a tile);
// the element form stages the gathered values in a GM scratch, as the hardware does.
template <class I> inline Tile<I> gm_as_tile(const GmPart<I>& q, const char* site) {
    if (q.col_stride() != 1 || (q.rank > 1 && q.strides[q.rank - 2] != q.cols()))
        fail(site, "mgather's GM indices must be a contiguous tensor");
    Tile<I> t{};
    t.p = q.base + q.row_offset(0);
    t.rows = t.vr = int32_t(q.rows());
    t.cols = t.vc = int32_t(q.cols());
    t.stride = int32_t(q.cols());
    return t;
}
template <class T, class G, class I>
inline void mgather(const Tile<T>& d, const GmPart<G>& p, const GmPart<I>& idx, int elem, int oob, const char* site) {
    mgather(d, p, gm_as_tile(idx, site), elem, oob, site);
}
template <class T, class G, class I>
inline void mgather(const Tile<T>& d, const GmPart<G>& p, const GmPart<I>& idx, const GmPart<G>& scratch, int elem,
                    int oob, const char* site) {
    mgather(d, p, gm_as_tile(idx, site), elem, oob, site);
    int64_t n = 1;
    for (int i = 0; i < scratch.rank; ++i) n *= scratch.size[i];
    if (n < int64_t(d.vr) * d.vc) fail(site, "mgather's scratch holds %lld elements, %d needed", (long long)n, d.vr * d.vc);
    G* s = scratch.base + scratch.row_offset(0);
    for (int64_t i = 0; i < d.vr; ++i)
        for (int64_t j = 0; j < d.vc; ++j) s[i * d.vc + j] = G(d.row(i)[j]);
}
// pto.mscatter: s[i, j] stored to element idx[i, j] of a partition of the whole tensor.
template <class G, class T, class I>
inline void mscatter(const GmPart<G>& p, const Tile<T>& s, const Tile<I>& idx, const char* site) {
    p.strided_only("mscatter", site);
    MoveTimer moving;
    same_valid(s, idx, site);
    p.check_bounds(site);
    int64_t n = 1;
    for (int i = 0; i < p.rank; ++i) n *= p.size[i];
    for (int64_t i = 0; i < s.vr; ++i)
        for (int64_t j = 0; j < s.vc; ++j) {
            const int64_t f = int64_t(idx.row(i)[j]);
            if (f < 0 || f >= n) fail(site, "mscatter index %lld at [%lld, %lld] is outside the tensor's %lld "
                                      "elements", (long long)f, (long long)i, (long long)j, (long long)n);
            p.base[p.row_offset(f / p.cols()) + (f % p.cols()) * p.col_stride()] = G(s.row(i)[j]);
        }
}

// ---------------------------------------------------------------- cube
// c[:m, :n] (+)= a[:m, :k] x b[:k, :n]; float inputs accumulate in f32, i8 in i32.
// f32 x f32 -> f32, a block of 4 rows x 16 columns at a time, kept in registers over the
// whole k loop: each element still sums its products in k order (the same roundings as the
// row loop below), only rows and columns are interleaved.
// fp32 x fp32 -> fp32: R x Cn blocks of the result held in registers across all of K. Each
// element is still acc + a*b in k order (no FMA, no reordering), so every block shape gives
// the same bits; AVX-512 machines take 6 x 32 blocks (12 of its 32 vector registers), the
// others 4 x 24 (what GCC keeps in AVX2's 16 registers: 2.5x the speed of 4 x 16 there),
// and 8-wide blocks for the columns past them.
template <int R, int Cn>
__attribute__((always_inline)) inline void mac_f32_block(float* const* cr, const float* const* ar,
                                                         const float* b0, int64_t bstride, int64_t k,
                                                         bool accumulate) {
    float acc[R][Cn];
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < Cn; ++j) acc[r][j] = accumulate ? cr[r][j] : 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
        const float* br = b0 + kk * bstride;
        for (int r = 0; r < R; ++r) {
            const float av = ar[r][kk];
            for (int j = 0; j < Cn; ++j) acc[r][j] = acc[r][j] + av * br[j];
        }
    }
    for (int r = 0; r < R; ++r)
        for (int j = 0; j < Cn; ++j) cr[r][j] = acc[r][j];
}
// A thread's scratch for one packed panel of the right operand (the simulator's own memory,
// not an on-chip buffer): grown on demand, kept for the thread's later matmuls.
inline float* panel_scratch(int64_t floats) {
    static thread_local std::vector<float> buf;
    if (int64_t(buf.size()) < floats) buf.resize(size_t(floats));
    return buf.data();
}
// Rows [0, m0) of c in whole R x Cn blocks (the columns past the last block too); returns m0.
// Column panels outermost: a panel's Cn columns of b over all of K are packed once into
// contiguous scratch (k x Cn floats, L1-resident for the usual K) and every R-row block of a
// runs over it -- read in place, b's rows are a stride apart and each block walked all of b
// through L2. The sums are those of the row loop (k order), whatever the traversal.
template <int R, int Cn>
__attribute__((always_inline)) inline int64_t mac_f32_rows(const Tile<float>& c, const Tile<float>& a,
                                                           const Tile<float>& b, int64_t m, int64_t k,
                                                           int64_t n, bool accumulate) {
    const int64_t nb = n - n % Cn;
    const int64_t m0 = n >= 8 ? m - m % R : 0;
    const bool pack = m0 >= 2 * R;          // a panel packed for one block would not pay
    float* panel = pack && nb ? panel_scratch(k * Cn) : nullptr;
    for (int64_t j = 0; j < nb; j += Cn) {
        const float* bj = b.p + j;
        int64_t bstride = b.stride;
        if (pack) {
            for (int64_t kk = 0; kk < k; ++kk)
                std::memcpy(panel + kk * Cn, b.p + kk * b.stride + j, sizeof(float) * Cn);
            bj = panel;
            bstride = Cn;
        }
        for (int64_t i = 0; i < m0; i += R) {
            const float* ar[R];
            float* cj[R];
            for (int r = 0; r < R; ++r) { ar[r] = a.row(i + r); cj[r] = c.row(i + r) + j; }
            mac_f32_block<R, Cn>(cj, ar, bj, bstride, k, accumulate);
        }
    }
    for (int64_t i = 0; i < m0; i += R) {
        const float* ar[R];
        float* crow[R];
        for (int r = 0; r < R; ++r) { ar[r] = a.row(i + r); crow[r] = c.row(i + r); }
        int64_t j8 = nb;                                     // the columns past them: 8 at a time,
        for (; j8 + 8 <= n; j8 += 8) {                       // then one by one
            float* cj[R];
            for (int r = 0; r < R; ++r) cj[r] = crow[r] + j8;
            mac_f32_block<R, 8>(cj, ar, b.p + j8, b.stride, k, accumulate);
        }
        for (int r = 0; r < R; ++r) {
            float* cr = crow[r];
            for (int64_t j = j8; j < n; ++j) {
                float v = accumulate ? cr[j] : 0.0f;
                for (int64_t kk = 0; kk < k; ++kk) v = v + ar[r][kk] * b.row(kk)[j];
                cr[j] = v;
            }
        }
    }
    return m0;
}
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target("avx512f"))) inline int64_t mac_f32_rows_wide(const Tile<float>& c, const Tile<float>& a,
                                                                   const Tile<float>& b, int64_t m, int64_t k,
                                                                   int64_t n, bool accumulate) {
    return mac_f32_rows<6, 32>(c, a, b, m, k, n, accumulate);
}
inline bool has_avx512() {
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes;
}
#endif
PTO_VEC_CLONES inline int64_t mac_f32_rows_narrow(const Tile<float>& c, const Tile<float>& a, const Tile<float>& b,
                                                  int64_t m, int64_t k, int64_t n, bool accumulate) {
    return mac_f32_rows<4, 24>(c, a, b, m, k, n, accumulate);
}
template <class C, class A, class B>
inline void mac_rows(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, int64_t m, int64_t k, int64_t n,
                     bool accumulate) {
    using Acc = typename pick<is_int<C>, int32_t, float>::type;
    int64_t m0 = 0;
    if constexpr (is_same<C, float>::value && is_same<A, float>::value && is_same<B, float>::value) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
        m0 = has_avx512() ? mac_f32_rows_wide(c, a, b, m, k, n, accumulate)
                          : mac_f32_rows_narrow(c, a, b, m, k, n, accumulate);
#else
        m0 = mac_f32_rows_narrow(c, a, b, m, k, n, accumulate);
#endif
    }
    for (int64_t i = m0; i < m; ++i) {
        C* cr = c.row(i);
        if (!accumulate)
            for (int64_t j = 0; j < n; ++j) cr[j] = C(0);
        const A* ar = a.row(i);
        for (int64_t kk = 0; kk < k; ++kk) {
            const Acc av = Acc(calc_t<A>(ar[kk]));
            const B* br = b.row(kk);
            for (int64_t j = 0; j < n; ++j) cr[j] = C(Acc(cr[j]) + av * Acc(calc_t<B>(br[j])));
        }
    }
}
template <class C, class A, class B>
inline void matmul_into(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, bool accumulate, const char* site) {
    const int64_t m = a.vr, k = a.vc, n = b.vc;
    // K is the left's valid columns: the right's valid rows must cover them
    if (b.vr < k) fail(site, "matmul: the right's valid K does not cover the left's: left is %lldx%lld, right is %dx%d", (long long)m, (long long)k, b.vr, b.vc);
    if (c.vr != m || c.vc != n) fail(site, "matmul result must be %lldx%lld, got %dx%d", (long long)m, (long long)n, c.vr, c.vc);
    if (m < 1 || k < 1 || n < 1 || m > 4095 || k > 4095 || n > 4095)
        fail(site, "matmul m=%lld k=%lld n=%lld: each must be in [1, 4095]", (long long)m, (long long)k, (long long)n);
    mac_rows(c, a, b, m, k, n, accumulate);
}
// pto.tgemv: c[0, :] = a[0, :k] x b[:k, :], k the left's valid columns (the right's valid K
// covers them); c is a 16-row acc tile with one valid row.
template <class C, class A, class B>
inline void gemv_into(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, bool accumulate, const char* site) {
    const int64_t k = a.vc, n = b.vc;
    if (a.vr != 1) fail(site, "gemv's left operand is one row, got %d valid", a.vr);
    if (b.vr < k) fail(site, "gemv: the right operand's K (%d) does not cover the left's (%lld)", b.vr, (long long)k);
    if (c.vr != 1 || c.vc != n) fail(site, "gemv result must be 1x%lld valid, got %dx%d", (long long)n, c.vr, c.vc);
    if (k < 1 || n < 1 || k > 4095 || n > 4095) fail(site, "gemv k=%lld n=%lld: each must be in [1, 4095]", (long long)k, (long long)n);
    mac_rows(c, a, b, 1, k, n, accumulate);
}
// The accumulating forms start from acc_in (usually c itself); the bias forms add a row.
template <class C> inline void take_acc(const Tile<C>& c, const Tile<C>& acc_in, const char* site) {
    if (c.p == acc_in.p) return;
    same_valid(c, acc_in, site);
    for (int64_t i = 0; i < c.vr; ++i) std::memmove(c.row(i), acc_in.row(i), size_t(c.vc) * sizeof(C));
}
template <class C, class Bi> inline void add_bias_row(const Tile<C>& c, const Tile<Bi>& bias) {
    for (int64_t i = 0; i < c.vr; ++i)
        for (int64_t j = 0; j < c.vc; ++j) c.row(i)[j] = C(calc_t<C>(c.row(i)[j]) + calc_t<C>(convert<C>(bias.p[j], RM_RINT)));
}
template <class C, class A, class B>
inline void tmatmul(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, const char* site) {
    matmul_into(c, a, b, false, site);
}
// pto.tmatmul.acc ins(acc_in, a, b) outs(c): c = acc_in + a x b.
template <class C, class A, class B>
inline void tmatmul_acc(const Tile<C>& c, const Tile<C>& acc_in, const Tile<A>& a, const Tile<B>& b, const char* site) {
    take_acc(c, acc_in, site);
    matmul_into(c, a, b, true, site);
}
// pto.tmatmul.bias ins(a, b, bias) outs(c): c = a x b + bias[0, :].
template <class C, class A, class B, class Bi>
inline void tmatmul_bias(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, const Tile<Bi>& bias, const char* site) {
    if (bias.vr != 1 || bias.vc != b.vc) fail(site, "bias must be 1x%d, got %dx%d", b.vc, bias.vr, bias.vc);
    matmul_into(c, a, b, false, site);
    add_bias_row(c, bias);
}
// pto.tmatmul.mx (a5): c = (a * 2^(sa - 127)) x (b * 2^(sb - 127)), one E8M0 scale per 32
// elements of K -- sa [M, K/32] for a's rows, sb [K/32, N] for b's columns. Each 32-wide
// group's products are summed exactly (FP8 x FP8 fits a double), scaled by both
// exponents, and added into the f32 result.
template <class C, class A, class S, class B>
inline void matmul_mx_into(const Tile<C>& c, const Tile<A>& a, const Tile<S>& sa, const Tile<B>& b,
                           const Tile<S>& sb, bool accumulate, const char* site) {
    const int64_t m = a.vr, k = a.vc, n = b.vc, groups = (k + 31) / 32;
    if (b.vr != k) fail(site, "matmul_mx inner dims differ: left is %lldx%lld, right is %dx%d", (long long)m, (long long)k, b.vr, b.vc);
    if (c.vr != m || c.vc != n) fail(site, "matmul_mx result must be %lldx%lld, got %dx%d", (long long)m, (long long)n, c.vr, c.vc);
    if (sa.vr != m || sa.vc != groups || sb.vr != groups || sb.vc != n)
        fail(site, "matmul_mx scales must be %lldx%lld and %lldx%lld, got %dx%d and %dx%d", (long long)m,
             (long long)groups, (long long)groups, (long long)n, sa.vr, sa.vc, sb.vr, sb.vc);
    std::vector<double> bcol(size_t(k > 0 ? k : 1));
    for (int64_t j = 0; j < n; ++j) {
        for (int64_t kk = 0; kk < k; ++kk) bcol[size_t(kk)] = double(float(b.row(kk)[j]));
        for (int64_t i = 0; i < m; ++i) {
            const A* ar = a.row(i);
            double sum = 0;
            for (int64_t g = 0; g < groups; ++g) {
                double part = 0;
                for (int64_t kk = g * 32; kk < k && kk < g * 32 + 32; ++kk) part += double(float(ar[kk])) * bcol[size_t(kk)];
                sum += part * double(float(sa.row(i)[g])) * double(float(sb.row(g)[j]));
            }
            C& out = c.row(i)[j];
            out = C(float(accumulate ? double(float(out)) + sum : sum));
        }
    }
}
template <class C, class A, class S, class B>
inline void tmatmul_mx(const Tile<C>& c, const Tile<A>& a, const Tile<S>& sa, const Tile<B>& b, const Tile<S>& sb,
                       const char* site) {
    matmul_mx_into(c, a, sa, b, sb, false, site);
}
template <class C, class A, class S, class B>
inline void tmatmul_mx_acc(const Tile<C>& c, const Tile<C>& acc_in, const Tile<A>& a, const Tile<S>& sa,
                           const Tile<B>& b, const Tile<S>& sb, const char* site) {
    take_acc(c, acc_in, site);
    matmul_mx_into(c, a, sa, b, sb, true, site);
}
template <class C, class A, class S, class B, class Bi>
inline void tmatmul_mx_bias(const Tile<C>& c, const Tile<A>& a, const Tile<S>& sa, const Tile<B>& b,
                            const Tile<S>& sb, const Tile<Bi>& bias, const char* site) {
    if (bias.vr != 1 || bias.vc != b.vc) fail(site, "bias must be 1x%d, got %dx%d", b.vc, bias.vr, bias.vc);
    matmul_mx_into(c, a, sa, b, sb, false, site);
    add_bias_row(c, bias);
}
template <class C, class A, class B>
inline void tgemv(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, const char* site) {
    gemv_into(c, a, b, false, site);
}
template <class C, class A, class B>
inline void tgemv_acc(const Tile<C>& c, const Tile<C>& acc_in, const Tile<A>& a, const Tile<B>& b, const char* site) {
    take_acc(c, acc_in, site);
    gemv_into(c, a, b, true, site);
}
template <class C, class A, class B, class Bi>
inline void tgemv_bias(const Tile<C>& c, const Tile<A>& a, const Tile<B>& b, const Tile<Bi>& bias, const char* site) {
    if (bias.vr != 1 || bias.vc < b.vc) fail(site, "bias must cover 1x%d, got %dx%d", b.vc, bias.vr, bias.vc);
    gemv_into(c, a, b, false, site);
    add_bias_row(c, bias);
}

// ---------------------------------------------------------------- kernel entry helpers
template <class T> inline T scalar_arg(int64_t raw) {
    const uint64_t u = uint64_t(raw);
    if constexpr (is_same<T, float>::value) return f32_from_bits(uint32_t(u));
    else if constexpr (is_same<T, double>::value) return f64_from_bits(u);
    else if constexpr (is_same<T, half>::value) return half::from_bits(uint16_t(u));
    else if constexpr (is_same<T, bfloat16>::value) return bfloat16::from_bits(uint16_t(u));
    else if constexpr (is_same<T, bool>::value) return (u & 1u) != 0;
    else return T(u);
}

inline void copy_message(char* err, int32_t errlen, const char* msg) {
    if (!err || errlen <= 0) return;
    std::snprintf(err, size_t(errlen), "%s", msg);
}

}  // namespace pto

#include "pto_sim_comm.hpp"
