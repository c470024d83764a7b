#pragma once
// The bookkeeping Gymnasium's RecordEpisodeStatistics does, on the engine's device: every step adds
// the reward to each environment's running return and counts the step; where an episode ended, the
// finished return and length are published and the running sums start again.
#include <cstdint>

#include "sim/memory.hpp"
#include "sim/stream.hpp"

namespace surge::python {

struct EpisodeBookViews {
  Span<const float> reward;             // [N]
  Span<const std::uint8_t> terminated;  // [N]
  Span<const std::uint8_t> truncated;   // [N]
  Span<float> running_return;           // [N] the current episode's return so far
  Span<std::int32_t> running_length;    // [N] the current episode's steps so far
  Span<float> episode_return;           // [N] the return of the episode that ended at this step, else 0
  Span<std::int32_t> episode_length;    // [N] its length, else 0
  Span<std::uint8_t> ended;             // [N] 1 where an episode ended at this step (either flag)
};

void book_episodes(const EpisodeBookViews& views, const Stream& stream);

}  // namespace surge::python
