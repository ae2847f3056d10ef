// alias(a, b, out, out2): out = a + 1 (after 30 ms), out2 = b + 1.
// When the caller passes the same tensor as b and out, out2 must see the new out.
#include "../orch.h"
ENTRY {
    if (sleep_task(api, t[0], t[2], 30)) return 1;
    if (sleep_task(api, t[1], t[3], 0)) return 2;
    return 0;
}
