// tensor.h for hand-written kernels (@pl.function(external_source=...)) on pypto's
// simulator: the tensor descriptor kernel_entry(args) receives for each tensor argument.
// 128 bytes, laid out as PyPTO's runtime lays its ChipTensor out, so a kernel that reads
// buffer.addr, start_offset, ndims, shapes[] or strides[] reads the same fields.
#pragma once
#include <cstddef>
#include <cstdint>

struct ChipBuffer {
    uint64_t addr;     // GM address of element 0 of the tensor's storage
    uint64_t size;     // bytes from addr to the end of the window
};

struct ChipTensor {
    ChipBuffer buffer;          // @0
    uint64_t owner_task_id;     // @16 (0 on the simulator)
    uint64_t start_offset;      // @24, in elements: the window's first element
    uint32_t version;           // @32
    uint32_t ndims;             // @36
    uint8_t dtype;              // @40: pypto's data type code (pypto_abi.h PYPTO_*)
    uint8_t manual_dep;         // @41
    uint8_t is_contiguous;      // @42
    uint8_t address_space;      // @43
    uint32_t shapes[5];         // @44: the window's extent per dim
    uint64_t extent;            // @64: elements in the window
    int64_t strides[5];         // @72: elements between neighbours along each dim
    uint8_t reserved_[16];
};

static_assert(sizeof(ChipTensor) == 128, "ChipTensor is 128 bytes");
static_assert(offsetof(ChipTensor, start_offset) == 24 && offsetof(ChipTensor, ndims) == 36 &&
              offsetof(ChipTensor, dtype) == 40 && offsetof(ChipTensor, shapes) == 44 &&
              offsetof(ChipTensor, extent) == 64 && offsetof(ChipTensor, strides) == 72,
              "ChipTensor field offsets");
