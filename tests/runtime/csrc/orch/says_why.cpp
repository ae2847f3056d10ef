// says_why(x, y): a check of the orchestration's own fails; it says why through api->fail.
#include "../orch.h"
ENTRY {
    api->fail(api->ctx, "block table entry 7 is past the cache");
    return 1;
}
