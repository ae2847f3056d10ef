// Always fails with a message.
#include "../testkern.h"
extern "C" int pypto_kernel_entry(const int64_t* args, char* err, int32_t errlen) {
    const PyptoTensor* in = arg_tensor(args, 0);
    KCHECK(0, "injected failure: tile of %lld elements out of range", (long long)tensor_numel(in));
    return 0;
}
