// out (int64[4]) = {address of in's first element, in.ndims, in.shape[0], in.dtype}.
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* in = arg_tensor(args, 0);
    const PyptoTensor* o = arg_tensor(args, 1);
    KCHECK(o->dtype == PYPTO_INT64 && tensor_numel(o) >= 4, "probe: out must be int64[>=4]");
    static const int sizes[] = {4, 2, 2, 1, 2, 4, 8, 1, 1, 8};
    int64_t* po = (int64_t*)o->addr + o->start_offset;
    po[0] = (int64_t)(intptr_t)in->addr + in->start_offset * sizes[in->dtype];
    po[1] = in->ndims;
    po[2] = in->ndims ? in->shape[0] : 0;
    po[3] = in->dtype;
    return 0;
}
