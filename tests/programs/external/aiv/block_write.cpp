// A hand-written AIV kernel in the reference runtime's entry form: block b of an SPMD
// launch writes kScale * (b + 1) at line (base + b) of out.
#include <cstdint>
#include <pto/pto-inst.hpp>
#include "tensor.h"
#include "../common/lines.h"
#include "intrinsic.h"

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
    __gm__ ChipTensor* t = reinterpret_cast<__gm__ ChipTensor*>(args[0]);
    __gm__ float* out = reinterpret_cast<__gm__ float*>(t->buffer.addr) + t->start_offset;
    int64_t base = args[1];
    int32_t b = get_block_idx(args);
    out[(base + b) * kFloatsPerLine] = kScale * static_cast<float>(b + 1);
    dcci(&out[0], 0, 0);
}
