// sleep_chain(x, y) on [8, 8]: tmp = x + 1 (50 ms), y = tmp + 1 (50 ms).
#include "../orch.h"
ENTRY {
    int64_t shape[2] = {8, 8};
    int64_t tmp = api->alloc_tensor(api->ctx, PYPTO_FP32, 2, shape);
    if (sleep_task(api, t[0], tmp, 50)) return 1;
    if (sleep_task(api, tmp, t[1], 50)) return 2;
    return 0;
}
