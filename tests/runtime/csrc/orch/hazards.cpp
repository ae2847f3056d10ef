// hazards(x, y, z) on [16, 16]:
//   t0: y = x + 1 (20 ms)   t1: z = y + y   t2: x = z + 1   t3: y = x + 1
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[1], 20)) return 1;
    if (submit3(api, K_ADD, t[1], IN, t[1], IN, t[2], OUT)) return 2;
    if (sleep_task(api, t[2], t[0], 0)) return 3;
    if (sleep_task(api, t[0], t[1], 0)) return 4;
    return 0;
}
