// The blocks of one SPMD kernel call spread over lanes (host threads), for the simulator's
// shortest launch (fastpath.py). Lane 0 is the calling thread; the other lanes are threads
// kept for the process that spin a while after a job before they sleep, so a launch hands its
// blocks over in about a microsecond where a Python thread took tens (a futex wake, the GIL,
// the bookkeeping). Lanes claim blocks one at a time from a shared counter, and a helper that
// has not joined when the caller runs out of blocks is told not to: after an idle spell a
// sleeping helper's CPU can take hundreds of microseconds to wake (measured in this VM: up to
// 650 us), and with blocks fixed per lane the caller waited for it with its own blocks done.
// The helpers are kept off the caller's CPU (their affinity is the caller's CPUs but the one
// it runs on, set again when it moves): Linux wakes a thread on its waker's CPU, and there the
// helper and the caller took turns while the other CPU idled -- in 46 of 75 bench launches one
// lane ran every block (with the helpers kept off, none: the row sum's wall 137-199 -> 88-100
// us). One launch at a time: pypto_lanes_run returns -1 when another is running (the caller
// runs its lanes itself). The launch is one struct made once per plan (lanes.py), so a call
// converts one argument, and its summary (first start, last end, failures) comes back in it:
// after a large kernel the interpreter's own data is out of the caches, and each Python step
// there costs.
#include <atomic>
#include <cstdint>
#include <ctime>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

// Mirrored by lanes.py's _Launch.
struct PyptoLanes {
    void* entry;
    const int64_t* const* args;    // one argument array per block
    int64_t* times;                // start, end per block (CLOCK_MONOTONIC ns)
    int32_t* status;               // per block
    char* errs;                    // errlen bytes per lane
    int32_t blocks, lanes, errlen;
    int32_t failed;                // out: blocks whose status is not 0
    int64_t first, last;           // out: the earliest block start, the latest block end
    int32_t* lane_of;              // out: per block, the lane that ran it (-1: not run)
};

namespace {
typedef int (*Entry)(const int64_t*, char*, int32_t);

struct Job {
    const PyptoLanes* l;           // the launch
    std::atomic<int32_t> next{0};  // the next block to claim
    std::atomic<bool> stop{false}; // a block failed: no block starts after it
};

constexpr int kMaxLanes = 64;
constexpr int64_t kSpinNs = 1000000;  // a waiting thread spins this long, then sleeps (futex)
Job job;                              // set up only while no helper lane runs
// Each helper has its own word: the launch bumps it to offer the helper a lane, and the
// helper joins by taking the offer (OFFERED -> TAKEN) unless the caller revoked it first
// (OFFERED -> IDLE), so a helper never touches a job it has not joined. `asleep` flags who
// waits in the kernel for a wake.
enum { IDLE, OFFERED, TAKEN };
struct alignas(64) Slot {
    std::atomic<uint32_t> go{0};
    std::atomic<int> asleep{0};
    std::atomic<int> state{IDLE};
};
Slot slots[kMaxLanes];
struct alignas(64) Done {
    std::atomic<uint32_t> pending{0};  // helpers offered the current job and not yet done with it
    std::atomic<int> asleep{0};
} done;
std::atomic<bool> busy{false};
pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
int started = 0;                      // helper threads made so far (lanes 1..started)
pthread_t threads[kMaxLanes];         // lane -> its helper thread
int kept_off = -1;                    // the CPU the helpers are kept off (-1: none yet)

int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

long futex(std::atomic<uint32_t>& word, int op, uint32_t value) {
    return syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, nullptr, nullptr, 0);
}

// Wait until word != seen: spin, then sleep (asleep set first, so a waker sees it).
uint32_t await_change(std::atomic<uint32_t>& word, uint32_t seen, std::atomic<int>& asleep) {
    const int64_t until = now_ns() + kSpinNs;
    uint32_t v;
    for (int spins = 1; (v = word.load(std::memory_order_seq_cst)) == seen; ++spins) {
        __builtin_ia32_pause();
        if (spins % 256 == 0 && now_ns() > until) {
            asleep.store(1, std::memory_order_seq_cst);
            if (word.load(std::memory_order_seq_cst) == seen) futex(word, FUTEX_WAIT_PRIVATE, seen);
            asleep.store(0, std::memory_order_seq_cst);
        }
    }
    return v;
}

void wake(std::atomic<uint32_t>& word, std::atomic<int>& asleep) {
    if (asleep.load(std::memory_order_seq_cst)) futex(word, FUTEX_WAKE_PRIVATE, 1);
}

// Claim blocks until none is left; after a failure (here or on another lane) the claimed
// blocks are not run, and each lane's error buffer keeps at most its one failure.
void run_lane(int lane) {
    const PyptoLanes& l = *job.l;
    const Entry entry = reinterpret_cast<Entry>(l.entry);
    char* err = l.errs + int64_t(lane) * l.errlen;
    for (int32_t b; (b = job.next.fetch_add(1, std::memory_order_relaxed)) < l.blocks;) {
        if (job.stop.load(std::memory_order_relaxed)) continue;
        err[0] = 0;
        l.lane_of[b] = lane;
        l.times[2 * b] = now_ns();
        const int32_t status = entry(l.args[b], err, l.errlen);
        l.times[2 * b + 1] = now_ns();
        l.status[b] = status;
        if (status != 0) job.stop.store(true, std::memory_order_relaxed);
    }
}

void finish_helper() {
    if (done.pending.fetch_sub(1, std::memory_order_seq_cst) == 1) wake(done.pending, done.asleep);
}

void* helper(void* arg) {
    const int lane = int(reinterpret_cast<intptr_t>(arg));
    Slot& slot = slots[lane];
    uint32_t seen = 0;                        // (go starts at 0; the first job may be in already)
    for (;;) {
        seen = await_change(slot.go, seen, slot.asleep);
        int offered = OFFERED;
        if (!slot.state.compare_exchange_strong(offered, TAKEN, std::memory_order_acq_rel)) continue;
        run_lane(lane);
        slot.state.store(IDLE, std::memory_order_release);
        finish_helper();
    }
    return nullptr;
}
// Keep the helpers off the caller's CPU; left as they are when the caller may run on one CPU only.
void keep_off(int cpu) {
    if (cpu == kept_off || cpu < 0 || cpu >= CPU_SETSIZE) return;
    kept_off = cpu;
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) != 0 || !CPU_ISSET(cpu, &mask) || CPU_COUNT(&mask) < 2) return;
    CPU_CLR(cpu, &mask);
    for (int lane = 1; lane <= started; ++lane) pthread_setaffinity_np(threads[lane], sizeof mask, &mask);
}

// A forked child has none of the parent's helper threads: it starts its own, from a clean slate.
void forget_after_fork() {
    started = 0;
    kept_off = -1;
    pthread_mutex_init(&start_lock, nullptr);
    busy.store(false);
    done.pending.store(0);
    done.asleep.store(0);
    for (Slot& slot : slots) {
        slot.go.store(0);
        slot.asleep.store(0);
        slot.state.store(IDLE);
    }
}
__attribute__((constructor)) void on_load() { pthread_atfork(nullptr, nullptr, forget_after_fork); }
}  // namespace

extern "C" int pypto_lanes_run(PyptoLanes* l) {
    const int32_t lanes = l->lanes, blocks = l->blocks;
    if (lanes < 1 || lanes > kMaxLanes || blocks < 1) return -2;
    if (busy.exchange(true, std::memory_order_acquire)) return -1;
    pthread_mutex_lock(&start_lock);
    for (; started < lanes - 1; ++started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        const int ok = pthread_create(&t, &attr, helper, reinterpret_cast<void*>(intptr_t(started + 1)));
        pthread_attr_destroy(&attr);
        if (ok != 0) break;
        threads[started + 1] = t;
        kept_off = -1;                        // (a new helper has the caller's affinity)
    }
    const int helpers = started < lanes - 1 ? started : lanes - 1;
    pthread_mutex_unlock(&start_lock);
    keep_off(sched_getcpu());
    int64_t* times = l->times;
    int32_t* status = l->status;
    for (int32_t b = 0; b < blocks; ++b) status[b] = 0, l->lane_of[b] = -1, times[2 * b] = times[2 * b + 1] = 0;
    job.l = l;
    job.next.store(0, std::memory_order_relaxed);
    job.stop.store(false, std::memory_order_relaxed);
    done.pending.store(uint32_t(helpers), std::memory_order_seq_cst);
    for (int lane = 1; lane <= helpers; ++lane) {
        slots[lane].state.store(OFFERED, std::memory_order_seq_cst);
        slots[lane].go.fetch_add(1, std::memory_order_seq_cst);
        wake(slots[lane].go, slots[lane].asleep);
    }
    run_lane(0);
    for (int lane = 1; lane <= helpers; ++lane) {      // the blocks are all claimed: who never came
        int offered = OFFERED;                         // is not waited for
        if (slots[lane].state.compare_exchange_strong(offered, IDLE, std::memory_order_acq_rel)) finish_helper();
    }
    for (uint32_t left; (left = done.pending.load(std::memory_order_seq_cst)) != 0;)
        await_change(done.pending, left, done.asleep);
    busy.store(false, std::memory_order_release);
    int64_t first = 0, last = 0;
    int32_t failed = 0;
    for (int32_t b = 0; b < blocks; ++b) {
        if (times[2 * b] && (first == 0 || times[2 * b] < first)) first = times[2 * b];
        if (times[2 * b + 1] > last) last = times[2 * b + 1];
        failed += status[b] != 0;
    }
    l->first = first, l->last = last, l->failed = failed;
    return helpers + 1;
}
