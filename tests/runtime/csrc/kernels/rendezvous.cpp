// Blocks that wait for each other: each block adds one to a shared int32 counter
// (tensor 0) and spins until every block of the launch has, for up to args[1] ms; then
// writes 1 (all met) or 0 (timed out) into its own element of tensor 1 (int32[blocks]).
// Only a launch whose blocks run at the same time (sync_start) can complete it.
#include <atomic>
#include <chrono>
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* counter = arg_tensor(args, 0);
    const PyptoTensor* met = arg_tensor(args, 1);
    int64_t ms = args[2];
    int64_t block = args[3], blocks = args[4];        // the hidden arguments after the scalar
    KCHECK(counter->dtype == PYPTO_INT32 && met->dtype == PYPTO_INT32, "rendezvous: int32");
    KCHECK(block >= 0 && block < blocks && blocks <= tensor_numel(met), "rendezvous: bad block");
    auto* c = reinterpret_cast<std::atomic<int32_t>*>((int32_t*)counter->addr + counter->start_offset);
    c->fetch_add(1);
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    int32_t all = 0;
    while (std::chrono::steady_clock::now() < until)
        if (c->load() >= blocks) { all = 1; break; }
    ((int32_t*)met->addr)[tensor_elem(met, block)] = all;
    return 0;
}
