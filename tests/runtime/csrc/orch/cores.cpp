// cores(x, y[6, 8, 8]): three cube and three vector tasks, 30 ms each, all independent.
#include "../orch.h"
ENTRY {
    for (int64_t i = 0; i < 6; ++i) {
        int64_t vs[3] = {1, 8, 8}, off[3] = {i, 0, 0};
        int64_t yv = api->view(api->ctx, t[1], 3, vs, off);
        if (sleep_task(api, t[0], yv, 30, i < 3 ? K_SLEEP_CUBE : K_SLEEP)) return 1;
    }
    return 0;
}
