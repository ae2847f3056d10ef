// Prints the ABI layout as the C compiler sees it, for comparison with ctypes.
#include <stddef.h>
#include <stdio.h>
#include "pypto_abi.h"
int main(void) {
    printf("PyptoTensor %zu %zu %zu %zu %zu %zu %zu\n", sizeof(PyptoTensor),
           offsetof(PyptoTensor, addr), offsetof(PyptoTensor, start_offset),
           offsetof(PyptoTensor, ndims), offsetof(PyptoTensor, dtype),
           offsetof(PyptoTensor, shape), offsetof(PyptoTensor, strides));
    printf("PyptoRuntimeApi %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu\n", sizeof(PyptoRuntimeApi),
           offsetof(PyptoRuntimeApi, ctx), offsetof(PyptoRuntimeApi, alloc_tensor),
           offsetof(PyptoRuntimeApi, view), offsetof(PyptoRuntimeApi, submit),
           offsetof(PyptoRuntimeApi, scope_begin), offsetof(PyptoRuntimeApi, scope_end),
           offsetof(PyptoRuntimeApi, read_scalar), offsetof(PyptoRuntimeApi, fail),
           offsetof(PyptoRuntimeApi, tensor_dim), offsetof(PyptoRuntimeApi, submit_task),
           offsetof(PyptoRuntimeApi, predicate_next), offsetof(PyptoRuntimeApi, reshape));
    return 0;
}
