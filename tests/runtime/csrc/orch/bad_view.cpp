// bad_view(x, y): asks for a view starting past the end of x, then submits it (a window
// that starts inside and runs past the end is allowed, as on the device).
#include "../orch.h"
ENTRY {
    int64_t vs[2] = {8, 8}, off[2] = {9, 0};
    int64_t v = api->view(api->ctx, t[0], 2, vs, off);
    sleep_task(api, v, t[1], 0);
    return 0;
}
