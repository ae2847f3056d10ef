// Cross-rank windows (the HOST level). This process is one rank of a distributed run:
// every rank's window is mapped here side by side (rank r's at base + r * window_bytes),
// so a peer's copy of a window tensor is at the same offset of the peer's window. Signals
// are atomics on that shared memory; a wait that is never satisfied fails after wait_s
// seconds naming the rank, the cell and the value (never a hang). The runtime sets the
// context through pypto_set_comm (emitted into kernels that use these ops).
#pragma once
#include <chrono>
#include <cstring>
#include <thread>

namespace pto {

struct CommContext {
    int32_t rank = -1;
    int32_t nranks = 0;
    char* base = nullptr;
    int64_t window_bytes = 0;
    double wait_s = 60.0;
};

inline CommContext& comm_context() {
    static CommContext c;
    return c;
}

inline const CommContext& comm_ready(const char* site) {
    const CommContext& c = comm_context();
    if (!c.base || c.rank < 0)
        fail(site, "a cross-rank op outside a distributed run (no comm context): run the program through "
                   "its @pl.jit.host function");
    return c;
}

inline int32_t comm_rank(const char* site) { return comm_ready(site).rank; }
inline int32_t comm_nranks(const char* site) { return comm_ready(site).nranks; }

// the peer's copy of `bytes` bytes at `local` in this rank's window
template <class T> inline T* comm_peer(T* local, int64_t bytes, int32_t peer, const char* site) {
    const CommContext& c = comm_ready(site);
    char* mine = c.base + int64_t(c.rank) * c.window_bytes;
    const int64_t off = reinterpret_cast<char*>(local) - mine;
    if (off < 0 || off + bytes > c.window_bytes)
        fail(site, "rank %d: the tensor is not inside this rank's window (a pld.DistributedTensor the host "
                   "function made with pld.window)", int(c.rank));
    if (peer < 0 || peer >= c.nranks)
        fail(site, "rank %d: peer %d is not a rank of the run (0..%d)", int(c.rank), int(peer), int(c.nranks - 1));
    return reinterpret_cast<T*>(c.base + int64_t(peer) * c.window_bytes + off);
}

// bytes from a partition's first element to one past its last
template <class T> inline int64_t comm_span(const GmPart<T>& p) {
    int64_t last = 0;
    for (int i = 0; i < p.rank; ++i) {
        if (p.size[i] == 0) return 0;
        last += (p.size[i] - 1) * p.strides[i];
    }
    return (last + 1) * int64_t(sizeof(T));
}

template <class T> inline GmPart<T> comm_shift(const GmPart<T>& p, int32_t peer, const char* site) {
    p.strided_only("a cross-rank access", site);
    p.check_bounds(site);
    GmPart<T> q = p;
    q.base = comm_peer(p.base, comm_span(p), peer, site);
    return q;
}

template <class T> inline T* comm_cell(const GmPart<T>& p, const char* what, const char* site) {
    static_assert(sizeof(T) == 4, "signal cells are 32-bit");
    p.strided_only(what, site);
    for (int i = 0; i < p.rank; ++i)
        if (p.size[i] != 1) fail(site, "%s names one cell, the partition has %lld in dim %d", what, (long long)p.size[i], i);
    p.check_bounds(site);
    return p.base;
}

inline const char* comm_where(const int64_t* offset, int rank, char* buf, size_t n) {
    size_t k = std::snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; ++i) k += std::snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)offset[i]);
    if (k < n) std::snprintf(buf + k, n - k, "]");
    return buf;
}

// until *cell == expected (cmp 0) or >= expected (cmp 1), at most wait_s seconds
template <class T>
inline void comm_spin(T* cell, int32_t expected, int32_t cmp, const int64_t* offset, int rank, const char* site) {
    const CommContext& c = comm_ready(site);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(c.wait_s);
    for (int64_t n = 0;; ++n) {
        const T v = __atomic_load_n(cell, __ATOMIC_SEQ_CST);
        if (cmp == 0 ? v == T(expected) : v >= T(expected)) return;
        if ((n & 255) == 255 && std::chrono::steady_clock::now() > until) {
            char where[96];
            fail(site, "rank %d waited %g s for signal cell %s to be %s %d; it holds %d (no peer notified it: "
                       "check who notifies this cell of this rank)", int(c.rank), c.wait_s,
                 comm_where(offset, rank, where, sizeof where), cmp == 0 ? "==" : ">=", int(expected), int(v));
        }
        std::this_thread::yield();
    }
}

// pld.system.notify: a cell of the peer's copy += value (op 0, AtomicAdd) or = value (op 1, Set)
template <class T> inline void comm_notify(const GmPart<T>& p, int32_t peer, int32_t value, int32_t op, const char* site) {
    T* cell = comm_peer(comm_cell(p, "notify", site), int64_t(sizeof(T)), peer, site);
    if (op == 0) __atomic_fetch_add(cell, T(value), __ATOMIC_SEQ_CST);
    else if (op == 1) __atomic_store_n(cell, T(value), __ATOMIC_SEQ_CST);
    else fail(site, "notify: op %d is neither AtomicAdd (0) nor Set (1)", int(op));
}

// pld.system.wait: this rank's own cell
template <class T> inline void comm_wait(const GmPart<T>& p, int32_t expected, int32_t cmp, const char* site) {
    T* cell = comm_peer(comm_cell(p, "wait", site), int64_t(sizeof(T)), comm_ready(site).rank, site);
    if (cmp != 0 && cmp != 1) fail(site, "wait: cmp %d is neither Eq (0) nor Ge (1)", int(cmp));
    comm_spin(cell, expected, cmp, p.offset, p.rank, site);
}

// pld.tile.remote_load / remote_store: a region of the peer's copy
template <class T> inline void comm_tload(const Tile<T>& d, const GmPart<T>& p, int32_t peer, const char* site) {
    tload(d, comm_shift(p, peer, site), site);
}
template <class G, class T> inline void comm_tstore(const GmPart<G>& p, const Tile<T>& s, int32_t peer, const char* site) {
    tstore(comm_shift(p, peer, site), s, site);
}
template <class G, class T> inline void comm_tstore_add(const GmPart<G>& p, const Tile<T>& s, int32_t peer, const char* site) {
    tstore_add(comm_shift(p, peer, site), s, site);
}

// pld.tensor.barrier over a [world] (or [world, 1]) INT32 signal: +1 into each peer's cell
// of this rank, wait until each peer's cell here is >= 1, then take those credits back
// (-1 each): the signal is all zeros again once every rank passed, so it can be reused.
template <class T> inline void comm_barrier(const GmPart<T>& p, const char* site) {
    static_assert(sizeof(T) == 4, "signal cells are 32-bit");
    const CommContext& c = comm_ready(site);
    p.strided_only("barrier", site);
    p.check_bounds(site);
    int64_t cells = 1;
    for (int i = 0; i < p.rank; ++i) cells *= p.size[i];
    if (cells < c.nranks) fail(site, "barrier: the signal has %lld cells for %d ranks", (long long)cells, int(c.nranks));
    T* mine = comm_peer(p.base, comm_span(p), c.rank, site);
    const int64_t stride = p.strides[0];
    for (int32_t peer = 0; peer < c.nranks; ++peer)
        if (peer != c.rank)
            __atomic_fetch_add(comm_peer(mine + c.rank * stride, int64_t(sizeof(T)), peer, site), T(1), __ATOMIC_SEQ_CST);
    for (int32_t src = 0; src < c.nranks; ++src)
        if (src != c.rank) {
            int64_t at[2] = {src, 0};
            comm_spin(mine + src * stride, 1, 1, at, p.rank, site);
        }
    for (int32_t src = 0; src < c.nranks; ++src)
        if (src != c.rank) __atomic_fetch_sub(mine + src * stride, T(1), __ATOMIC_SEQ_CST);
}

}  // namespace pto
