#include "interop/python/src/episode_book.hpp"

#include "sim/parallel.cuh"

namespace surge::python {

namespace {

struct BookStep {
  const float* reward;
  const std::uint8_t* terminated;
  const std::uint8_t* truncated;
  float* running_return;
  std::int32_t* running_length;
  float* episode_return;
  std::int32_t* episode_length;
  std::uint8_t* ended;

  SURGE_HD void operator()(std::int64_t i) const {
    const float total = running_return[i] + reward[i];
    const std::int32_t length = running_length[i] + 1;
    const bool done = terminated[i] || truncated[i];
    ended[i] = done ? 1 : 0;
    episode_return[i] = done ? total : 0.0f;
    episode_length[i] = done ? length : 0;
    running_return[i] = done ? 0.0f : total;
    running_length[i] = done ? 0 : length;
  }
};

}  // namespace

// ============================== launchers ==============================

void book_episodes(const EpisodeBookViews& v, const Stream& stream) {
  const std::int64_t n = v.reward.size;
  SURGE_CHECK(v.terminated.size == n && v.truncated.size == n && v.running_return.size == n &&
                  v.running_length.size == n && v.episode_return.size == n && v.episode_length.size == n &&
                  v.ended.size == n,
              "episode bookkeeping views differ in size");
  parallel_for(stream, n,
               BookStep{v.reward.data, v.terminated.data, v.truncated.data, v.running_return.data,
                        v.running_length.data, v.episode_return.data, v.episode_length.data, v.ended.data},
               8);
}

}  // namespace surge::python
