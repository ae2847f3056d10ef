// unbalanced(x, y): opens a scope and never closes it.
#include "../orch.h"
ENTRY {
    api->scope_begin(api->ctx, 0);
    return sleep_task(api, t[0], t[1], 0);
}
