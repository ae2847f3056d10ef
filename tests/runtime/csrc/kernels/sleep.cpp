// Sleeps args[2] milliseconds, then out = in + 1 (fp32).
#include <unistd.h>
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* in = arg_tensor(args, 0);
    const PyptoTensor* o = arg_tensor(args, 1);
    int64_t ms = args[2];
    KCHECK(ms >= 0 && ms < 10000, "sleep: bad duration %lld", (long long)ms);
    KCHECK(in->dtype == PYPTO_FP32 && o->dtype == PYPTO_FP32, "sleep: expected fp32");
    int64_t n = tensor_numel(o);
    KCHECK(tensor_numel(in) == n, "sleep: element counts differ");
    if (ms) usleep((useconds_t)(ms * 1000));
    const float* pi = (const float*)in->addr;
    float* po = (float*)o->addr;
    for (int64_t k = 0; k < n; ++k) po[tensor_elem(o, k)] = pi[tensor_elem(in, k)] + 1.0f;
    return 0;
}
