#include "rl/agent_set.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include "sim/error.hpp"

namespace surge::rl {
namespace {

// A round's agents, handed to its threads. While more agents have iterations left than twice the threads,
// a thread keeps the agent it took until that agent's run of iterations ends. With fewer (in_turns()), a
// thread hands its agent back after every iteration and takes the one that waited longest, so the last
// agents' iterations are shared out in turn and the threads end within about an iteration of each other,
// not one agent's whole run apart. With no more agents left than threads, each keeps its agent to the end
// (turns would only move agents between cores). An agent's iterations still run one at a time, in order.
class RoundQueue {
 public:
  RoundQueue(const std::vector<std::int64_t>& limits, int threads) : threads_(static_cast<std::size_t>(threads)) {
    for (std::size_t k = 0; k < limits.size(); ++k)
      if (limits[k] > 0) ready_.push_back(k);
    left_ = ready_.size();
    update_turns();
  }

  // The next agent to iterate, none when every agent's run has ended; waits while the agents with
  // iterations left are all on other threads.
  std::optional<std::size_t> take() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !ready_.empty() || left_ == 0; });
    if (ready_.empty()) return std::nullopt;
    const std::size_t agent = ready_.front();
    ready_.pop_front();
    return agent;
  }

  // Gives `agent` back after its iterations on this thread; `more` when its run goes on.
  void give_back(std::size_t agent, bool more) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (more)
        ready_.push_back(agent);
      else
        left_ -= 1;
      update_turns();
    }
    changed_.notify_all();
  }

  bool in_turns() const { return in_turns_.load(std::memory_order_relaxed); }

 private:
  void update_turns() { in_turns_.store(left_ > threads_ && left_ <= 2 * threads_, std::memory_order_relaxed); }

  const std::size_t threads_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::size_t> ready_;  // agents with iterations left that no thread holds, longest waiting first
  std::size_t left_ = 0;           // agents with iterations left, held or not
  std::atomic<bool> in_turns_{false};
};

}  // namespace

int agent_threads(std::size_t agents) {
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<std::size_t>(1, std::min(agents, cores)));
}

std::string run_or_fall_back(bool capturing, const std::function<void()>& run, const std::function<void()>& give_up) {
  if (!capturing) {
    run();
    return "";
  }
  std::string failure;
  try {
    run();
    return "";
  } catch (const InputError&) {
    throw;  // the user's to fix, not the graph's
  } catch (const Error& e) {
    failure = e.what();
  }
  give_up();
  run();
  return failure.empty() ? std::string("the capture failed") : failure;
}

std::string iterate_or_go_eager(Trainer& trainer) {
  // Trainer::iterate captures its graph at the first iteration after the eager one.
  const bool capturing = trainer.uses_graph() && trainer.iterations_enqueued() >= 1 && !trainer.graph_captured();
  return run_or_fall_back(
      capturing, [&] { trainer.iterate(); }, [&] { trainer.stop_using_graph(); });
}

void iterate_agents(const std::vector<Trainer*>& trainers, Device device) {
  if (device.is_cuda()) {
    for (Trainer* trainer : trainers) iterate_or_go_eager(*trainer);
    return;
  }
  // Each trainer set the process's thread count for itself when it was built; the count across the
  // agents is given here, and a trainer's own parallel loops run inside this region on its one thread.
  omp_set_max_active_levels(1);
  const auto count = static_cast<std::int64_t>(trainers.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(agent_threads(trainers.size()))
  for (std::int64_t k = 0; k < count; ++k) trainers[static_cast<std::size_t>(k)]->iterate();
}

std::vector<std::int64_t> iterate_agents_for(const std::vector<Trainer*>& trainers,
                                             const std::vector<std::int64_t>& limits,
                                             const std::function<bool(std::size_t)>& after) {
  SURGE_CHECK(limits.size() == trainers.size(), "one limit per trainer");
  for (const Trainer* trainer : trainers) SURGE_CHECK(trainer->device().is_cpu(), "the trainers run on the CPU");
  std::vector<std::int64_t> done(trainers.size(), 0);
  // An exception cannot leave an OpenMP region: the first is kept and thrown after it.
  std::exception_ptr failure;
  omp_set_max_active_levels(1);
  const int threads = agent_threads(trainers.size());
  RoundQueue queue(limits, threads);
#pragma omp parallel num_threads(threads)
  while (const std::optional<std::size_t> next = queue.take()) {
    const std::size_t agent = *next;
    bool more = true;
    try {
      do {
        trainers[agent]->iterate();
        ++done[agent];
        more = after(agent) && done[agent] < limits[agent];
      } while (more && !queue.in_turns());
    } catch (...) {
      more = false;
#pragma omp critical(surge_agent_failure)
      if (!failure) failure = std::current_exception();
    }
    queue.give_back(agent, more);
  }
  if (failure) std::rethrow_exception(failure);
  return done;
}

AgentIterations::AgentIterations(Device device) : device_(device), origin_(device), settled_(device) {
  for (int slot = 0; slot < 2; ++slot) copied_.emplace_back(device);
}

AgentIterations::~AgentIterations() { origin_.synchronize_noexcept(); }

void AgentIterations::iterate_each(const std::vector<Trainer*>& trainers) {
  settle();
  if (device_.is_cpu()) return iterate_agents(trainers, device_);
  for (Trainer* trainer : trainers) {
    const std::string failure = iterate_or_go_eager(*trainer);
    if (fallback_.empty() && !failure.empty()) fallback_ = "an agent's own CUDA graph: " + failure;
  }
}

void AgentIterations::iterate(const std::vector<Trainer*>& trainers) {
  if (device_.is_cpu() || failed_ || trainers.empty()) return iterate_each(trainers);
  // The first iteration of each runs eagerly (its cuBLASLt plans, every buffer touched); a graph also
  // needs every trainer at the same one of the two metrics slots.
  const std::int64_t enqueued = trainers.front()->iterations_enqueued();
  for (const Trainer* trainer : trainers)
    if (!trainer->uses_graph() || trainer->iterations_enqueued() < 1 ||
        trainer->iterations_enqueued() % 2 != enqueued % 2)
      return iterate_each(trainers);
  if (trainers != captured_) {
    settle();
    if (!capture(trainers)) return iterate_each(trainers);
  }
  if (trainers_busy_) {
    for (std::size_t k = 0; k < trainers.size(); ++k) {
      entry_[k].record(trainers[k]->stream());
      entry_[k].wait(origin_);
    }
    trainers_busy_ = false;
  }
  int slot = 0;
  for (Trainer* trainer : trainers) slot = trainer->claim_graph_slot();
  graphs_[slot]->launch();
  copied_[static_cast<std::size_t>(slot)].record(origin_);
  launched_ = true;
}

bool AgentIterations::capture(const std::vector<Trainer*>& trainers) {
  std::vector<const Stream*> branches;
  for (const Trainer* trainer : trainers) branches.push_back(&trainer->stream());
  captured_.clear();
  origin_.synchronize();  // the graphs replaced below have finished their launches
  // The eager iterations' metrics copies, tracked by each trainer's own events until the capture below
  // hands the slots to this set's events, must have landed first.
  for (const Trainer* trainer : trainers) trainer->stream().synchronize();
  try {
    for (int slot = 0; slot < 2; ++slot) {
      graphs_[slot] = std::make_unique<IterationGraph>(origin_);
      graphs_[slot]->capture(
          [&] {
            for (Trainer* trainer : trainers)
              trainer->enqueue_captured_iteration(slot, copied_[static_cast<std::size_t>(slot)]);
          },
          branches);
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    graphs_[0].reset();
    graphs_[1].reset();
    failed_ = true;
    fallback_ = std::string("the agents' CUDA graph: ") + e.what();
    return false;
  }
  while (entry_.size() < trainers.size()) entry_.emplace_back(device_);
  captured_ = trainers;
  trainers_busy_ = true;
  return true;
}

void AgentIterations::settle() {
  if (!launched_) return;
  settled_.record(origin_);
  for (const Trainer* trainer : captured_) settled_.wait(trainer->stream());
  launched_ = false;
  trainers_busy_ = true;
}

}  // namespace surge::rl
