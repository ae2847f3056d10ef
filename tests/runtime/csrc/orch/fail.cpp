// fail(x, y1, y2): a 100 ms task, a failing task, then a task that needs the failed one.
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[1], 100)) return 1;
    submit2(api, K_FAIL, t[0], IN, t[2], OUT);
    sleep_task(api, t[2], t[1], 0);   // depends on the failed task: must never run
    return 0;
}
