// slow_submit(x, y1, y2): submit a task, spend 100 ms in the orchestration, submit another.
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[1], 0)) return 1;
    usleep(100 * 1000);
    if (sleep_task(api, t[0], t[2], 0)) return 2;
    return 0;
}
