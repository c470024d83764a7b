// The helper thread behind run_task_pair (rl/cpu_task_pair.hpp).
#include "rl/cpu_task_pair.hpp"

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>

namespace surge::rl {
namespace {

// A task's exception is kept for the caller: thrown on the helper thread it would end the process, and
// thrown through the caller's wait it would leave the helper running a task whose context is gone.
void run_task(PairTask task, void* context, int index, std::exception_ptr errors[2]) {
  try {
    task(context, index);
  } catch (...) {
    errors[index] = std::current_exception();
  }
}

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// One posted pair at a time. `state_` holds the pair's number (upper bits) and how many of its two tasks
// have been claimed (low byte); a task is claimed by advancing it, so each runs once, whoever takes it.
class Helper {
 public:
  static Helper& instance() {
    static Helper* helper = new Helper;  // never destroyed: its thread serves until the process ends
    return *helper;
  }

  bool try_acquire() { return !busy_.test_and_set(std::memory_order_acquire); }
  void release() { busy_.clear(std::memory_order_release); }

  void run(PairTask task, void* context, std::exception_ptr errors[2]) {
    task_ = task;
    context_ = context;
    errors_ = errors;
    done_.store(0, std::memory_order_relaxed);
    state_.store(((state_.load(std::memory_order_relaxed) >> 8) + 1) << 8, std::memory_order_release);
    state_.notify_one();
    while (claim_one()) {}
    // The helper took a task and runs it: wait, giving the core up now and then in case it was preempted.
    for (int spins = 1; done_.load(std::memory_order_acquire) < 2; ++spins) {
      spin_pause();
      if (spins % kSpinsBeforeYield == 0) std::this_thread::yield();
    }
  }

 private:
  // The helper spins this many pauses (some tens of microseconds) for the next pair before it sleeps: an
  // update posts its pairs microseconds apart, a rollout none for much longer. On a busy machine every
  // spin is time the process's other thread could have had.
  static constexpr int kSpins = 500;
  static constexpr int kSpinsBeforeYield = 256;

  Helper() {
    std::thread([this] { serve(); }).detach();
  }

  bool claim_one() {
    std::uint32_t state = state_.load(std::memory_order_acquire);
    while ((state & 0xff) < 2) {
      if (state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
        const int index = static_cast<int>(state & 0xff);
        run_task(task_, context_, index, errors_);  // published to the caller by the release below
        done_.fetch_add(1, std::memory_order_release);
        return true;
      }
    }
    return false;
  }

  void serve() {
    for (;;) {
      if (claim_one()) continue;
      const std::uint32_t seen = state_.load(std::memory_order_acquire);
      if ((seen & 0xff) < 2) continue;
      bool changed = false;
      for (int i = 0; i < kSpins && !changed; ++i) {
        spin_pause();
        changed = state_.load(std::memory_order_relaxed) != seen;
      }
      if (!changed) state_.wait(seen, std::memory_order_acquire);
    }
  }

  std::atomic<std::uint32_t> state_{2};  // pair 0, both tasks taken: nothing to do
  std::atomic<int> done_{0};
  std::atomic_flag busy_;
  PairTask task_ = nullptr;  // the posted pair's, written before its state is published
  void* context_ = nullptr;
  std::exception_ptr* errors_ = nullptr;
};

}  // namespace

void run_task_pair(PairTask task, void* context, bool helped) {
  std::exception_ptr errors[2];
  Helper* helper = helped ? &Helper::instance() : nullptr;
  if (helper && helper->try_acquire()) {
    helper->run(task, context, errors);
    helper->release();
  } else {
    run_task(task, context, 0, errors);
    run_task(task, context, 1, errors);
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

}  // namespace surge::rl
