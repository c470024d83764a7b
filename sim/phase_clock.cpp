#include "sim/phase_clock.hpp"

#include "sim/error.hpp"

namespace surge {

PhaseClock::PhaseClock(const Stream& stream, int phase_count) : stream_(stream), phase_count_(phase_count) {
  SURGE_CHECK(phase_count > 0, "a phase clock needs at least one phase");
}

void PhaseClock::start() {
  SURGE_CHECK(intervals_.empty(), "a phase clock starts once");
  intervals_.push_back(std::make_unique<StreamTimer>(stream_));
  intervals_.back()->start();
}

void PhaseClock::lap(int phase) {
  SURGE_CHECK(!intervals_.empty(), "a phase clock laps after start()");
  SURGE_CHECK(phase >= 0 && phase < phase_count_, "phase index out of range");
  intervals_.back()->stop();
  phases_.push_back(phase);
  intervals_.push_back(std::make_unique<StreamTimer>(stream_));
  intervals_.back()->start();
}

std::vector<double> PhaseClock::seconds() const {
  std::vector<double> total(static_cast<std::size_t>(phase_count_), 0.0);
  for (std::size_t k = 0; k < phases_.size(); ++k)
    total[static_cast<std::size_t>(phases_[k])] += intervals_[k]->seconds();
  return total;
}

}  // namespace surge
