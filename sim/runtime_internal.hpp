#pragma once
// Runtime facts that kernel launchers need; not part of the public interface.
#include <cstdint>
#include <vector>

#include "sim/stream.hpp"

namespace surge {
int cuda_multiprocessor_count(int device_index);  // cached per device
// The GPU a copy between two devices runs on: the stream's, or else the GPU among the two ends.
Device copy_device(Device dst_device, Device src_device, const Stream& stream);

// The order in which the CPU backend visits the items of a parallel_for: the plain sequential OpenMP loop,
// or a test mode (SURGE_CPU_ORDER=reverse|shuffle, read once) that proves kernels do not rely on that order,
// as the GPU does not. An unknown value throws surge::InputError.
enum class CpuOrder { kSequential, kReverse, kShuffle };
CpuOrder cpu_order();
// The visiting order of [0, n) under cpu_order() (not kSequential): n-1 down to 0, or a permutation that
// differs from call to call (a counter seeds it, so a run is repeatable).
std::vector<std::int64_t> cpu_visit_order(std::int64_t n);
// Whether an OpenMP loop that `wants` to fork (it is large enough to pay for it) would get more than one
// thread here: not where OpenMP has one thread, nor inside a region that already holds every active level
// allowed (an agent's loops inside rl/agent_set's loop over the agents). A `parallel for if (false)`
// still opens a region of one thread, which costs libgomp microseconds per loop (a futex call, more
// when nested), hundreds of times per CartPole iteration: loops that would not fork run inline instead,
// in the same order on the same thread.
bool cpu_loop_forks(bool wants);
}  // namespace surge
