// out = a * alpha (fp32 scalar in the low 32 bits of args[2]).
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* a = arg_tensor(args, 0);
    const PyptoTensor* o = arg_tensor(args, 1);
    uint32_t bits = (uint32_t)(uint64_t)args[2];
    float alpha;
    memcpy(&alpha, &bits, sizeof alpha);
    int64_t n = tensor_numel(o);
    KCHECK(tensor_numel(a) == n, "scale: element counts differ");
    const float* pa = (const float*)a->addr;
    float* po = (float*)o->addr;
    for (int64_t k = 0; k < n; ++k) po[tensor_elem(o, k)] = pa[tensor_elem(a, k)] * alpha;
    return 0;
}
