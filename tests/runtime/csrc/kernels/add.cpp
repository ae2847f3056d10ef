// out = a + b for fp32 tensors of equal element count, any strides.
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* a = arg_tensor(args, 0);
    const PyptoTensor* b = arg_tensor(args, 1);
    const PyptoTensor* o = arg_tensor(args, 2);
    KCHECK(a->dtype == PYPTO_FP32 && b->dtype == PYPTO_FP32 && o->dtype == PYPTO_FP32,
           "add: expected fp32 tensors");
    int64_t n = tensor_numel(o);
    KCHECK(tensor_numel(a) == n && tensor_numel(b) == n, "add: element counts differ");
    const float* pa = (const float*)a->addr;
    const float* pb = (const float*)b->addr;
    float* po = (float*)o->addr;
    for (int64_t k = 0; k < n; ++k)
        po[tensor_elem(o, k)] = pa[tensor_elem(a, k)] + pb[tensor_elem(b, k)];
    return 0;
}
