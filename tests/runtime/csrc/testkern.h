// Helpers for the hand-written test kernels (not part of the package).
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "pypto_abi.h"

static inline const PyptoTensor* arg_tensor(const int64_t* args, int i) {
    return (const PyptoTensor*)(intptr_t)args[i];
}

static inline int64_t tensor_numel(const PyptoTensor* t) {
    int64_t n = 1;
    for (int d = 0; d < t->ndims; ++d) n *= t->shape[d];
    return n;
}

// Element offset (from addr) of the k-th element in logical row-major order.
static inline int64_t tensor_elem(const PyptoTensor* t, int64_t k) {
    int64_t off = t->start_offset;
    for (int d = t->ndims - 1; d >= 0; --d) {
        int64_t n = t->shape[d];
        off += (k % n) * t->strides[d];
        k /= n;
    }
    return off;
}

#define KCHECK(cond, ...)                          \
    do {                                           \
        if (!(cond)) {                             \
            snprintf(err, (size_t)errlen, __VA_ARGS__); \
            return 1;                              \
        }                                          \
    } while (0)
