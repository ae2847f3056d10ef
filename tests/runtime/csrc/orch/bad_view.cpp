// bad_view(x, y): asks for a view outside x, then submits it.
#include "../orch.h"
ENTRY {
    int64_t vs[2] = {8, 8}, off[2] = {4, 0};
    int64_t v = api->view(api->ctx, t[0], 2, vs, off);
    sleep_task(api, v, t[1], 0);
    return 0;
}
