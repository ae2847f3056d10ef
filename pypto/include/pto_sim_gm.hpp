// pto_sim global memory: kernel tensor arguments, tensor views and their partitions.
// Every access is bounds-checked against the tensor the runtime passed in.
#pragma once
#include <atomic>
#include <chrono>
#include <thread>
#include "pto_sim_base.hpp"

namespace pto {

constexpr int kMaxDims = PYPTO_MAX_DIMS;

// A list of up to 5 extents/offsets, built by the emitter with dims(a, b, ...).
struct Dims {
    int n;
    int64_t v[kMaxDims];
};
template <class... A> inline Dims dims(A... a) {
    static_assert(sizeof...(A) <= kMaxDims, "at most 5 dimensions");
    return Dims{int(sizeof...(A)), {int64_t(a)...}};
}

// One tensor parameter: the element pointer (start_offset applied) and the real shape.
template <class T> struct GmArg {
    T* base;
    int ndims;
    int64_t shape[kMaxDims];
    int64_t strides[kMaxDims];
    const char* name;
};

template <class T>
inline GmArg<T> gm_arg(int64_t raw, int32_t dtype, const char* name) {
    const PyptoTensor* t = reinterpret_cast<const PyptoTensor*>(raw);
    if (!t) fail(name, "tensor argument is a null descriptor");
    if (t->dtype != dtype) fail(name, "tensor argument has dtype code %d, the kernel expects %d", int(t->dtype), int(dtype));
    if (t->ndims < 0 || t->ndims > kMaxDims) fail(name, "tensor argument has %d dims", int(t->ndims));
    if (!t->addr) fail(name, "tensor argument has a null address");
    GmArg<T> g;
    g.base = static_cast<T*>(t->addr) + t->start_offset;
    g.ndims = t->ndims;
    for (int i = 0; i < kMaxDims; ++i) {
        g.shape[i] = i < t->ndims ? t->shape[i] : 1;
        g.strides[i] = i < t->ndims ? t->strides[i] : 0;
    }
    g.name = name;
    return g;
}

// A dynamic dim of the kernel: extent `i` of a tensor argument's descriptor.
inline int64_t gm_dim(int64_t raw, int i, const char* name) {
    const PyptoTensor* t = reinterpret_cast<const PyptoTensor*>(raw);
    if (!t) fail(name, "tensor argument is a null descriptor");
    if (i < 0 || i >= t->ndims) fail(name, "tensor argument has %d dims, no dim %d", int(t->ndims), i);
    return t->shape[i];
}

// Furthest element (in elements from base) a shape/stride pair can touch; -1 when empty.
inline int64_t reach(int n, const int64_t* shape, const int64_t* strides) {
    int64_t r = 0;
    for (int i = 0; i < n; ++i) {
        if (shape[i] <= 0) return -1;
        r += (shape[i] - 1) * (strides[i] < 0 ? -strides[i] : strides[i]);
    }
    return r;
}

// pto.make_tensor_view: the kernel's own shape/strides over the argument's memory.
// Layouts beyond strides: an MX matmul's scales stored in the cube's blocked order.
// MX_A_ZZ: an [M, G] left scale as 16x2 blocks, row blocks outer, each block row-major;
// MX_B_NN: a [G, N] right scale as 2x16 blocks, column blocks outer, each block stored
// column by column (the 2 values of one column of N adjacent).
enum GmLayout : int { GM_STRIDED = 0, GM_MX_A_ZZ = 1, GM_MX_B_NN = 2 };
inline int64_t mx_offset(int layout, int64_t rows, int64_t cols, int64_t r, int64_t c) {
    if (layout == GM_MX_A_ZZ) return (((r / 16) * (cols / 2) + c / 2) * 16 + r % 16) * 2 + c % 2;
    return (((c / 16) * (rows / 2) + r / 2) * 16 + c % 16) * 2 + r % 2;
}

template <class T> struct GmView {
    T* base;
    int rank;
    int64_t shape[kMaxDims];
    int64_t strides[kMaxDims];
    int layout;
};

template <class T>
inline GmView<T> make_tensor_view(const GmArg<T>& a, Dims shape, Dims strides, const char* site,
                                  int layout = GM_STRIDED) {
    if (shape.n != strides.n) fail(site, "shape has %d dims but strides %d", shape.n, strides.n);
    GmView<T> v;
    v.base = a.base;
    v.rank = shape.n;
    v.layout = layout;
    if (layout != GM_STRIDED) {
        const int64_t br = layout == GM_MX_A_ZZ ? 16 : 2, bc = layout == GM_MX_A_ZZ ? 2 : 16;
        if (shape.n != 2 || shape.v[0] % br || shape.v[1] % bc)
            fail(site, "an MX scale view is 2-D of whole %lldx%lld blocks", (long long)br, (long long)bc);
        for (int i = 0; i < a.ndims; ++i)
            if (a.strides[i] != (i + 1 < a.ndims ? a.shape[i + 1] * a.strides[i + 1] : 1))
                fail(site, "an MX scale tensor is read whole and contiguous; %s is a strided window", a.name);
    }
    // The kernel's row-major view of the whole argument, when the argument is a strided
    // window (an orchestration slice or transpose): its elements are where its own strides
    // say, so the view takes them
    bool whole = a.ndims == shape.n;
    int64_t dense = 1;
    for (int i = shape.n - 1; whole && i >= 0; --i) {
        whole = shape.v[i] == a.shape[i] && strides.v[i] == dense;
        dense *= shape.v[i];
    }
    if (whole)
        for (int i = 0; i < shape.n; ++i) strides.v[i] = a.strides[i];
    for (int i = 0; i < shape.n; ++i) {
        if (shape.v[i] < 0) fail(site, "negative extent %lld in dim %d", (long long)shape.v[i], i);
        v.shape[i] = shape.v[i];
        v.strides[i] = strides.v[i];
        // dim by dim when the view walks the tensor in its own order (a DN view of a 2-D
        // tensor swaps the dims: only the reach check below applies to it)
        if (a.ndims == shape.n && strides.v[i] == a.strides[i] && shape.v[i] > a.shape[i])
            fail(site, "view dim %d has extent %lld but tensor %s has only %lld", i,
                 (long long)shape.v[i], a.name, (long long)a.shape[i]);
    }
    int64_t need = reach(v.rank, v.shape, v.strides);
    int64_t have = reach(a.ndims, a.shape, a.strides);
    if (need > have)
        fail(site, "view reaches element %lld but tensor %s ends at element %lld",
             (long long)need, a.name, (long long)have);
    return v;
}

// pto.partition_view: a window of a view; rows = product of leading dims, cols = last dim.
// The window is only checked against the view when an op (tload/tstore) touches it, so
// the error names the access, like a fault on the device would.
template <class T> struct GmPart {
    T* base;
    int rank;
    int layout;        // GmLayout: for an MX layout, base is the view's and elements are mx_at
    T* mx_at(int64_t r, int64_t c) const {
        return base + mx_offset(layout, extent[0], extent[1], offset[0] + r, offset[1] + c);
    }
    void strided_only(const char* op, const char* site) const {
        if (layout != GM_STRIDED) fail(site, "%s works on row-major tensors, not on MX scales", op);
    }
    int64_t offset[kMaxDims];
    int64_t size[kMaxDims];
    int64_t extent[kMaxDims];  // the view's shape
    int64_t strides[kMaxDims];
    int64_t rows() const {
        int64_t r = 1;
        for (int i = 0; i + 1 < rank; ++i) r *= size[i];
        return r;
    }
    int64_t cols() const { return rank ? size[rank - 1] : 1; }
    // Element offset of the first element of flattened row r.
    int64_t row_offset(int64_t r) const {
        int64_t off = 0;
        for (int i = rank - 2; i >= 0; --i) {
            off += (r % size[i]) * strides[i];
            r /= size[i];
        }
        return off;
    }
    int64_t col_stride() const { return rank ? strides[rank - 1] : 1; }
    // The first dim the window leaves the view in, or -1 (an empty partition touches
    // nothing: a clamped tail).
    int outside_dim() const {
        for (int i = 0; i < rank; ++i)
            if (size[i] == 0)
                return -1;
        for (int i = 0; i < rank; ++i)
            if (offset[i] < 0 || size[i] < 0 || offset[i] + size[i] > extent[i])
                return i;
        return -1;
    }
    void check_bounds(const char* site) const {
        const int i = outside_dim();
        if (i >= 0)
            fail(site, "partition [%lld, %lld) of dim %d is outside the tensor view's extent %lld",
                 (long long)offset[i], (long long)(offset[i] + size[i]), i, (long long)extent[i]);
    }
};

template <class T>
inline GmPart<T> partition_view(const GmView<T>& v, Dims offsets, Dims sizes, const char* site) {
    if (offsets.n != v.rank || sizes.n != v.rank)
        fail(site, "view has rank %d but %d offsets and %d sizes are given", v.rank, offsets.n, sizes.n);
    GmPart<T> p;
    p.base = v.base;
    p.rank = v.rank;
    p.layout = v.layout;
    for (int i = 0; i < v.rank; ++i) {
        p.offset[i] = offsets.v[i];
        p.size[i] = sizes.v[i];
        p.extent[i] = v.shape[i];
        p.strides[i] = v.strides[i];
        if (v.layout == GM_STRIDED)
            p.base += offsets.v[i] * v.strides[i];  // only dereferenced after check_bounds
    }
    return p;
}

// pto.load_scalar: the one element a 1x..x1 partition names (bounds-checked).
template <class T> inline T load_scalar(const GmPart<T>& p, const char* site) {
    p.strided_only("load_scalar", site);
    for (int i = 0; i < p.rank; ++i)
        if (p.size[i] != 1) fail(site, "load_scalar reads one element, the partition has %lld in dim %d", (long long)p.size[i], i);
    p.check_bounds(site);
    return *p.base;
}

// pto.store_scalar: the one element a 1x..x1 partition names, written.
template <class T, class V> inline void store_scalar(const GmPart<T>& p, V v, const char* site) {
    p.strided_only("store_scalar", site);
    for (int i = 0; i < p.rank; ++i)
        if (p.size[i] != 1) fail(site, "store_scalar writes one element, the partition has %lld in dim %d", (long long)p.size[i], i);
    p.check_bounds(site);
    *p.base = T(v);
}

// pto.syncall: a barrier over the blocks of a launch. `cell` holds two 64-bit words: the
// participants arrived in this round and the round. The last to arrive opens the round;
// the others wait for it (for up to 60 s: a block that never comes is an error, not a
// hang). A participant may arrive for `lanes` of them: the vector half of an unsplit core
// group stands for both its AIV lanes (they would do the same work).
inline void syncall_at(int64_t* cell, int32_t n, const char* site, int32_t lanes = 1) {
    if (n <= 0) fail(site, "syncall over %d blocks", int(n));
    auto* arrived = reinterpret_cast<std::atomic<int64_t>*>(cell);
    auto* round = reinterpret_cast<std::atomic<int64_t>*>(cell + 1);
    const int64_t mine = round->load();
    const int64_t now = arrived->fetch_add(lanes) + lanes;
    if (now > n)
        fail(site, "syncall: %lld participants arrived but used_cores is %d (an AIC and its two AIVs "
             "count 3)", (long long)now, int(n));
    if (now == n) {
        arrived->store(0);
        round->fetch_add(1);
        return;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (round->load() == mine) {
        if (std::chrono::steady_clock::now() > until)
            fail(site, "syncall: waited 60 s for the other blocks of the launch (%d meet)", int(n));
        std::this_thread::yield();
    }
}

// a hard syncall: the barrier the runtime gives the launch (its address)
inline void syncall(int64_t barrier, int32_t n, const char* site) {
    if (!barrier) fail(site, "syncall: the launch has no barrier");
    syncall_at(reinterpret_cast<int64_t*>(barrier), n, site);
}

// a soft syncall: the count lives in a GM workspace tensor (its first 16 bytes)
template <class T> inline void syncall(const GmArg<T>& ws, int32_t n, const char* site, int32_t lanes = 1) {
    int64_t bytes = int64_t(sizeof(T));
    for (int i = 0; i < ws.ndims; ++i) bytes *= ws.shape[i];
    if (bytes < 16) fail(site, "syncall: its gm_workspace holds %lld bytes, it needs 16", (long long)bytes);
    syncall_at(reinterpret_cast<int64_t*>(ws.base), n, site, lanes);
}

// pl.prefetch: an async GM -> L2 pull by the SDMA engine, a cache hint that changes no
// value. The engine's workspace (the runtime's, one per block) counts the prefetches issued
// and those landed; on the CPU the region's cache lines are pulled into the host's caches.
struct PrefetchContext { int64_t* workspace; };
struct AsyncEvent { int64_t seq; int64_t* workspace; };
struct AsyncSession { int64_t* workspace; };

inline PrefetchContext make_prefetch_async_context(int8_t* workspace, const char* site) {
    if (workspace == nullptr) fail(site, "make_prefetch_async_context: the runtime gave no SDMA workspace");
    return PrefetchContext{reinterpret_cast<int64_t*>(workspace)};
}

template <class T>
inline AsyncEvent tprefetch_async(const GmPart<T>& p, const PrefetchContext& ctx, const char* site) {
    p.check_bounds(site);
    int64_t* ws = ctx.workspace;
    const int64_t seq = ++ws[0];                    // issued
    const int64_t line = 64 / int64_t(sizeof(T)) > 0 ? 64 / int64_t(sizeof(T)) : 1;
    for (int64_t r = 0; r < p.rows(); ++r) {
        const T* row = p.base + p.row_offset(r);
        for (int64_t c = 0; c < p.cols(); c += line)
            __builtin_prefetch(row + c * p.col_stride(), 0, 3);
        ws[2] += p.cols() * int64_t(sizeof(T));     // bytes pulled
    }
    ws[1] = seq;                                    // landed
    return AsyncEvent{seq, ws};
}

inline AsyncSession get_prefetch_async_session(const PrefetchContext& ctx) {
    return AsyncSession{ctx.workspace};
}

inline bool wait_async_event(const AsyncEvent& e, const AsyncSession& s, const char* site) {
    if (e.workspace != s.workspace)
        fail(site, "wait_async_event: the event was started on another prefetch context than the session's");
    if (s.workspace[1] < e.seq)
        fail(site, "wait_async_event: prefetch %lld never landed", (long long)e.seq);
    return true;
}

}  // namespace pto
