// Helpers for the hand-written test orchestrations.
#pragma once
#include <stdint.h>
#include <unistd.h>
#include "pypto_abi.h"

enum { K_ADD = 0, K_SLEEP = 1, K_FAIL = 2, K_PROBE = 3, K_SCALE = 4, K_SLEEP_CUBE = 5,
       K_RENDEZVOUS = 6 };
enum { IN = PYPTO_DIR_INPUT, OUT = PYPTO_DIR_OUTPUT, INOUT = PYPTO_DIR_INOUT };

#define ENTRY extern "C" int32_t pypto_orchestration_entry( \
    const PyptoRuntimeApi* api, const int64_t* t, const uint64_t* s)

static inline int32_t submit2(const PyptoRuntimeApi* api, int32_t k, int64_t a, int32_t da,
                              int64_t b, int32_t db, int32_t ns = 0, uint64_t s0 = 0) {
    int64_t ts[2] = {a, b};
    int32_t ds[2] = {da, db};
    uint64_t ss[1] = {s0};
    return api->submit(api->ctx, k, 2, ts, ds, ns, ss);
}

static inline int32_t submit3(const PyptoRuntimeApi* api, int32_t k, int64_t a, int32_t da,
                              int64_t b, int32_t db, int64_t c, int32_t dc) {
    int64_t ts[3] = {a, b, c};
    int32_t ds[3] = {da, db, dc};
    return api->submit(api->ctx, k, 3, ts, ds, 0, nullptr);
}

// sleep kernel: out = in + 1 after `ms` milliseconds
static inline int32_t sleep_task(const PyptoRuntimeApi* api, int64_t in, int64_t out, uint64_t ms,
                                 int32_t kernel = K_SLEEP) {
    return submit2(api, kernel, in, IN, out, OUT, 1, ms);
}
