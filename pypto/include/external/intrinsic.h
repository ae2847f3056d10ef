// intrinsic.h for hand-written kernels on pypto's simulator: where a task's launch facts
// are. kernel_entry(args) gets them past its arguments, as PyPTO's runtime passes them:
// args[48] points at the block's context, args[49] at the core's.
#pragma once
#include <cstdint>

struct PyptoLocalContext {
    int64_t block_idx;      // this block of an SPMD launch (0 otherwise)
    int64_t block_num;      // how many blocks the launch runs
};

struct PyptoGlobalContext {
    int64_t sub_block_id;   // which vector core of its group runs this (0 or 1)
};

constexpr int kPyptoLocalContextArg = 48;
constexpr int kPyptoGlobalContextArg = 49;

inline int32_t get_block_idx(const int64_t* args) {
    return static_cast<int32_t>(reinterpret_cast<const PyptoLocalContext*>(args[kPyptoLocalContextArg])->block_idx);
}
inline int32_t get_block_num(const int64_t* args) {
    return static_cast<int32_t>(reinterpret_cast<const PyptoLocalContext*>(args[kPyptoLocalContextArg])->block_num);
}
inline int32_t get_sub_block_id(const int64_t* args) {
    return static_cast<int32_t>(reinterpret_cast<const PyptoGlobalContext*>(args[kPyptoGlobalContextArg])->sub_block_id);
}
