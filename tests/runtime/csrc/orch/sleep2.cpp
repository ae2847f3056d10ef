// sleep2(x, y1, y2): two independent 50 ms tasks (y1 = x + 1, y2 = x + 1).
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[1], 50)) return 1;
    if (sleep_task(api, t[0], t[2], 50)) return 2;
    return 0;
}
