// nodep(x, y, z): t0: y = x + 1 (30 ms); t1 reads y marked NO_DEP, so it does not wait.
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[1], 30)) return 1;
    if (submit2(api, K_SLEEP, t[1], PYPTO_DIR_NO_DEP, t[2], OUT, 1, 0)) return 2;
    return 0;
}
