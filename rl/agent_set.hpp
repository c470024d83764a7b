#pragma once
// Several independent learners in one process (docs/agents.md): one iteration of each, side by side.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rl/device_graph.hpp"
#include "rl/trainer.hpp"
#include "sim/stream.hpp"
#include "sim/transfer.hpp"

namespace surge::rl {

// The most iterations an agent runs between two joins of the CPU threads (a round of surge train --agents;
// surge bench train --agents times one round per repeat by default). More make fewer joins and fewer
// switches of a core from one agent's working set to another's; the progress line and Ctrl-C wait for
// the round (64 CartPole agents: about a second on two cores).
constexpr std::int64_t kAgentIterationsPerRound = 16;

// The CPU threads that run `agents` learners side by side: one per core, at most one per agent.
int agent_threads(std::size_t agents);

// One iteration of every trainer. On the CPU the trainers run in parallel, one per thread, and each
// on that one thread inside (nested parallel regions stay on it): a trainer's arithmetic is then that
// of a run alone on one thread, so its results are bit for bit those of that run. On CUDA each trainer
// enqueues its iteration (its graph) on its own stream, one after another, and none is waited for.
// Every trainer must be on `device`; call it from one host thread.
void iterate_agents(const std::vector<Trainer*>& trainers, Device device);

// Several iterations of each trainer between two joins of the threads (CPU only): a thread takes a
// trainer and runs up to `limits[k]` of its iterations back to back, calling `after(k)` on that same
// thread after each one; trainer k stops early when `after` returns false. A trainer's iterations stay
// in order on one thread, so its results are those of iterate_agents round by round, and of its run
// alone; `after(k)` may touch what belongs to agent k only. Fewer joins, no thread waiting while the
// host does each agent's bookkeeping, and an agent's working set stays in its core's cache for a run
// of iterations instead of one. Returns the iterations each trainer did.
std::vector<std::int64_t> iterate_agents_for(const std::vector<Trainer*>& trainers,
                                             const std::vector<std::int64_t>& limits,
                                             const std::function<bool(std::size_t)>& after);

// A step that may capture a CUDA graph, and what it falls back to when that capture fails: `run` is
// tried; when it throws surge::Error and `capturing` says a capture was part of it, `give_up` is called
// (the graph is not tried again) and `run` once more, without it. Anything else, and a second failure,
// is thrown on. Returns the first failure's message when it fell back, else "". (Host logic only: the
// CPU tests it with steps that throw.)
std::string run_or_fall_back(bool capturing, const std::function<void()>& run, const std::function<void()>& give_up);

// One iteration of `trainer`, the capture of its own graph included where this iteration makes it;
// when that capture fails, the trainer goes on eagerly (Trainer::stop_using_graph). Returns the
// failure's message when it fell back, else "".
std::string iterate_or_go_eager(Trainer& trainer);

// The agents' iterations, round after round. On the CPU, iterate_agents. On CUDA, once every trainer
// has done its first iteration (eagerly, as a run alone does) and uses graphs: one CUDA graph holds
// every trainer's iteration, each on its own stream, forked from this object's stream and joined back,
// so a round is one graph launch and no host loop of launches. It is captured twice (the metrics go to
// one of two host slots, alternating) and again whenever the set of trainers changes (an agent stopped
// at its target). When that capture fails, the agents go on with a host loop of their own iterations
// (each with its own graph, or eagerly where that capture fails too), uses_graph() turns false and
// fallback() says why. Declare it after the trainers: it waits for its work when destroyed.
class AgentIterations {
 public:
  explicit AgentIterations(Device device);
  ~AgentIterations();

  // One iteration of each of `trainers` (on the device, none waited for).
  void iterate(const std::vector<Trainer*>& trainers);
  // Orders every trainer's stream after the graph's launches so far. Call it before reading a trainer's
  // state through its stream (evaluation, checkpoints); its metrics (ready_metrics, drain) need no call.
  void settle();
  bool uses_graph() const { return !failed_ && !captured_.empty(); }
  // Why the agents left the graph of them all, or a trainer its own ("" while none did).
  const std::string& fallback() const { return fallback_; }

  // Its graphs keep a reference to its stream: it stays where it was made.
  AgentIterations(const AgentIterations&) = delete;
  AgentIterations& operator=(const AgentIterations&) = delete;

 private:
  bool capture(const std::vector<Trainer*>& trainers);
  void iterate_each(const std::vector<Trainer*>& trainers);

  Device device_;
  Stream origin_;
  std::vector<Event> copied_;  // [2]: recorded after each launch of graph s, whose metrics copies fill slot s
  Event settled_;
  std::vector<Event> entry_;  // [trainers]: each trainer's stream before a launch that must follow it
  std::unique_ptr<IterationGraph> graphs_[2];
  std::vector<Trainer*> captured_;
  bool failed_ = false;
  std::string fallback_;
  bool launched_ = false;      // launches since the last settle()
  bool trainers_busy_ = true;  // work on the trainers' own streams that the next launch must follow
};

}  // namespace surge::rl
