// chain(a, b, out) on [64, 32] fp32: tmp = a + b, then out = tmp + b in four row tiles,
// each in its own scope: out = a + 2b.
#include "../orch.h"
ENTRY {
    const int64_t R = 64, C = 32, TR = 16;
    api->scope_begin(api->ctx, 0);
    int64_t shape[2] = {R, C};
    int64_t tmp = api->alloc_tensor(api->ctx, PYPTO_FP32, 2, shape);
    if (!tmp) return 10;
    if (submit3(api, K_ADD, t[0], IN, t[1], IN, tmp, OUT)) return 11;
    for (int64_t i = 0; i < R / TR; ++i) {
        api->scope_begin(api->ctx, 0);
        int64_t vs[2] = {TR, C}, off[2] = {i * TR, 0};
        int64_t tv = api->view(api->ctx, tmp, 2, vs, off);
        int64_t bv = api->view(api->ctx, t[1], 2, vs, off);
        int64_t ov = api->view(api->ctx, t[2], 2, vs, off);
        if (submit3(api, K_ADD, tv, IN, bv, IN, ov, OUT)) return 12;
        api->scope_end(api->ctx);
    }
    api->scope_end(api->ctx);
    return 0;
}
