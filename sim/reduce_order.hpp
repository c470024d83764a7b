#pragma once
// The order of the CPU backend's parallel_reduce (sim/parallel.cuh), a plain header so that C++ code that
// must give the same bits can follow it.
#include <cstdint>

namespace surge {

// The CPU parallel_reduce's fixed chunks: element i belongs to chunk c where n*c/64 <= i < n*(c+1)/64, each
// chunk summed in index order, the chunks' sums added in chunk order. Fixed, so the result does not depend on
// the thread count; code that must give the same bits (rl/ppo_loss_fused.cpp) follows it.
inline constexpr std::int64_t kCpuReduceChunks = 64;

}  // namespace surge
