// rendezvous(counter, met, sync): 4 blocks of the rendezvous kernel, released together
// when the scalar `sync` is 1.
#include "../orch.h"
ENTRY {
    int64_t ts[2] = {t[0], t[1]};
    int32_t ds[2] = {INOUT, OUT};
    uint64_t ss[1] = {2000};
    return api->submit_task(api->ctx, K_RENDEZVOUS, 2, ts, ds, 1, ss, 0, nullptr, 4,
                            (int32_t)s[0]) < 0 ? 1 : 0;
}
