#pragma once
// PhaseMark, shared by the trainer's files (rl/trainer.cpp, rl/trainer_update.cpp): internal to them.
#include "rl/trainer.hpp"
#include "sim/phase_clock.hpp"

namespace surge::rl {

// Charges the work enqueued since the previous mark to `phase` when it ends, if a clock is attached
// (surge bench roofline); costs a null check otherwise.
class PhaseMark {
 public:
  PhaseMark(PhaseClock* clock, TrainPhase phase) : clock_(clock), phase_(phase) {}
  ~PhaseMark() {
    if (clock_) clock_->lap(static_cast<int>(phase_));
  }
  PhaseMark(const PhaseMark&) = delete;
  PhaseMark& operator=(const PhaseMark&) = delete;

 private:
  PhaseClock* clock_;
  TrainPhase phase_;
};

}  // namespace surge::rl
