// pto/pto-inst.hpp for hand-written kernels on pypto's simulator. The simulator runs a
// kernel as plain C++ on a CPU thread: a kernel that reads and writes GM through the
// pointers its tensor descriptors give works as written; PTO-ISA's tile instructions
// (TLOAD, TADD, ... on pto::Tile) are not provided here, and a kernel using them does not
// compile (pypto's own kernels are built from the language instead).
#pragma once
#include <cstdint>

// the CPU stub's marker: kernels written for it make cache maintenance a no-op
#ifndef PTO_CPUSTUB_HPP
#define PTO_CPUSTUB_HPP
#endif

template <class... A> inline void dcci(A&&...) {}       // no caches to flush on the CPU
inline void set_atomic_none() {}
