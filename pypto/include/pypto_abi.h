// The binary contract between generated kernels, generated host orchestration and
// the simulator runtime (pypto/runtime). Plain C so both sides agree on layout.
#pragma once
#include <stdint.h>

#define PYPTO_MAX_DIMS 5

// Data type codes (same numbering as pypto.dtype.DataType.code).
enum {
    PYPTO_FP32 = 0, PYPTO_FP16 = 1, PYPTO_BF16 = 2, PYPTO_INT8 = 3, PYPTO_INT16 = 4,
    PYPTO_INT32 = 5, PYPTO_INT64 = 6, PYPTO_UINT8 = 7, PYPTO_BOOL = 8, PYPTO_INDEX = 9,
    PYPTO_UINT16 = 10, PYPTO_UINT32 = 11, PYPTO_UINT64 = 12,
    PYPTO_FP8E4M3FN = 13, PYPTO_FP8E5M2 = 14, PYPTO_FP8E8M0 = 15,
    PYPTO_HF8 = 16, PYPTO_FP4 = 17,   /* e2m1 pairs: one byte, the even element in the low nibble */
};

// Argument directions of a submitted task (pl.adir.*).
enum {
    PYPTO_DIR_INPUT = 0, PYPTO_DIR_OUTPUT = 1, PYPTO_DIR_INOUT = 2,
    PYPTO_DIR_OUTPUT_EXISTING = 3, PYPTO_DIR_NO_DEP = 4,
};
// ORed into a direction: dump this argument (pl.dump_tag / pl.submit(dumps=[...])) when the
// run dumps arguments; once a launch's tasks tag any, only tagged arguments are dumped.
#define PYPTO_DIR_DUMP 0x100

// A tensor as a kernel sees it: GM base address plus a strided window (in elements).
typedef struct {
    void* addr;
    int64_t start_offset;
    int32_t ndims;
    int32_t dtype;
    int64_t shape[PYPTO_MAX_DIMS];
    int64_t strides[PYPTO_MAX_DIMS];
} PyptoTensor;

// Every kernel .so exports this. args[0..T) are (int64_t)(const PyptoTensor*),
// args[T..T+S) are scalar bit patterns (uint64 reinterpret), then six more: the task's
// block index, its block count (SPMD launches), the vector core's index in its group,
// the address of the launch's barrier (two int64 words, zero at the start: pl.system.syncall),
// the address of a Group's pipe (zeroed memory its cube and vector halves pass tiles
// through; 0 for other kernels) and that of the vector core's SDMA workspace (four zeroed
// int64 words, for a kernel whose info says "sdma": pl.prefetch; 0 for others). A Group's .so exports pypto_kernel_entry__<name>_aic and
// pypto_kernel_entry__<name>_aiv, run together on an AIC and an AIV. Returns 0 on success;
// otherwise writes a NUL-terminated message into err (errlen bytes) and returns 1.
typedef int (*pypto_kernel_entry_fn)(const int64_t* args, char* err, int32_t errlen);

// Services the runtime gives a host orchestration. Tensor handles are opaque ids.
typedef struct {
    void* ctx;
    int64_t (*alloc_tensor)(void* ctx, int32_t dtype, int32_t ndims, const int64_t* shape);
    int64_t (*view)(void* ctx, int64_t tensor, int32_t ndims, const int64_t* shape,
                    const int64_t* offsets);
    // Returns 0 on success, non-zero when the runtime refused the task.
    int32_t (*submit)(void* ctx, int32_t kernel_id, int32_t n_tensors, const int64_t* tensors,
                      const int32_t* dirs, int32_t n_scalars, const uint64_t* scalars);
    void (*scope_begin)(void* ctx, int32_t manual);
    void (*scope_end)(void* ctx);
    // One element of a tensor (indices within the handle's window), read once every task
    // submitted so far that writes it is done: its bytes, zero-extended, in *bits.
    // Returns 0 on success, non-zero when refused (the reason is kept by the runtime).
    int32_t (*read_scalar)(void* ctx, int64_t tensor, int32_t ndims, const int64_t* indices,
                           uint64_t* bits);
    // Stops the run with `message` (a check the orchestration makes failed); the
    // orchestration then returns non-zero.
    void (*fail)(void* ctx, const char* message);
    // The extent of dim `axis` of a tensor handle (a view's own shape), or -1 if refused.
    int64_t (*tensor_dim)(void* ctx, int64_t tensor, int32_t axis);
    // submit, also waiting for the tasks `deps` names (an id < 0 names none), returning the
    // task's id (or -1 when refused). kernel_id -1: a task that runs nothing. In a manual
    // scope a task waits only for its deps; elsewhere for its deps and what the tensors
    // it touches imply. An SPMD launch runs the kernel as `block_num` blocks (each sees
    // its index); with sync_start they all start at once.
    int64_t (*submit_task)(void* ctx, int32_t kernel_id, int32_t n_tensors, const int64_t* tensors,
                           const int32_t* dirs, int32_t n_scalars, const uint64_t* scalars,
                           int32_t n_deps, const int64_t* deps, int32_t block_num,
                           int32_t sync_start);
    // The next task submitted runs only if element `indices` of `tensor` compares (cmp:
    // 0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=) true with `value`, read when the task is dispatched
    // (after its deps and the element's writers); otherwise it is skipped, done at once.
    void (*predicate_next)(void* ctx, int64_t tensor, int32_t ndims, const int64_t* indices,
                           int32_t cmp, double value);
    // The elements of a contiguous tensor handle, in row-major order, as another shape (a new
    // handle; 0 when refused).
    int64_t (*reshape)(void* ctx, int64_t tensor, int32_t ndims, const int64_t* shape);
    // The same window with dims axis1 and axis2 swapped (a strided view, no data moved; a
    // new handle; 0 when refused).
    int64_t (*transpose)(void* ctx, int64_t tensor, int32_t axis1, int32_t axis2);
} PyptoRuntimeApi;

// Every orchestration .so exports this (extern "C"): tensors are the program's tensor
// parameters as handles, scalars their bit patterns, both in parameter order.
typedef int32_t (*pypto_orchestration_entry_fn)(const PyptoRuntimeApi* api,
                                                const int64_t* tensors,
                                                const uint64_t* scalars);
