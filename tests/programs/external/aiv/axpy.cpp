// y = a * x + y over every element of two same-shaped tensors, split across the blocks:
// reads the descriptors' shapes, strides and the scalar's bits.
#include <cstdint>
#include <cstring>
#include "tensor.h"
#include "intrinsic.h"

extern "C" __aicore__ void kernel_entry(__gm__ int64_t* args) {
    const ChipTensor* x = reinterpret_cast<const ChipTensor*>(args[0]);
    const ChipTensor* y = reinterpret_cast<const ChipTensor*>(args[1]);
    float a;
    uint32_t bits = static_cast<uint32_t>(args[2]);
    std::memcpy(&a, &bits, sizeof a);
    const float* xp = reinterpret_cast<const float*>(x->buffer.addr) + x->start_offset;
    float* yp = reinterpret_cast<float*>(y->buffer.addr) + y->start_offset;
    int32_t rows = static_cast<int32_t>(x->shapes[0]), cols = static_cast<int32_t>(x->shapes[1]);
    int32_t b = get_block_idx(args), n = get_block_num(args);
    for (int32_t r = b; r < rows; r += n)
        for (int32_t c = 0; c < cols; ++c)
            yp[r * y->strides[0] + c * y->strides[1]] += a * xp[r * x->strides[0] + c * x->strides[1]];
}
