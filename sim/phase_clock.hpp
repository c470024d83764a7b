#pragma once
// Time spent in each phase of a sequence of work enqueued on one stream: marks between the phases
// (CUDA events on the GPU, a steady clock on the CPU, whose stream runs work as it is enqueued), and
// the time between consecutive marks charged to the phase that just ended. A diagnostic: the marks
// keep a GPU from overlapping the phases, so use it outside the timed or graph-captured path.
#include <memory>
#include <vector>

#include "sim/stream.hpp"
#include "sim/timer.hpp"

namespace surge {

class PhaseClock {
 public:
  PhaseClock(const Stream& stream, int phase_count);

  void start();         // the first mark
  void lap(int phase);  // a mark: the work since the previous one belongs to `phase`
  // Waits for the last mark and returns the seconds charged to each phase, [phase_count].
  std::vector<double> seconds() const;
  int laps() const { return static_cast<int>(phases_.size()); }

 private:
  const Stream& stream_;
  int phase_count_;
  std::vector<std::unique_ptr<StreamTimer>> intervals_;  // one per lap, the last one open
  std::vector<int> phases_;                              // [laps] the phase of each closed interval
};

}  // namespace surge
