// `surge train --agents K`: the agents' iterations side by side, their outputs and the final table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "rl/agent_set.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/cli/train_agents.hpp"
#include "tools/cli/train_agents_output.hpp"
#include "tools/cli/train_eval.hpp"
#include "tools/cli/train_output.hpp"
#include "tools/cli/train_ranks.hpp"
#include "tools/cli/train_seeds.hpp"

namespace surge::cli {
namespace {

// One learner: an engine and a trainer of its own, and the agent's outputs (tools/cli/train_agents_output.hpp).
struct Agent : AgentRecord {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<PixelFrameStore> frames;  // pixel observations: the agent's own frame store, else null
  std::unique_ptr<rl::Trainer> trainer;
};

}  // namespace

int train_agents_separate(const AgentsPlan& plan, const std::string& out_dir) {
  const std::unique_ptr<rl::Collective> opened = rl::open_collective(plan.device);
  const rl::Collective& ranks = *opened;
  if (ranks.size() > 1)
    throw InputError("surge train: --agents and --grid run in one process; run them without mpirun");
  RunFolder folder(out_dir, plan.reuse, "surge train");
  const bool resume = plan.reuse == RunFolder::Reuse::Resume;
  std::vector<Agent> agents(plan.agents.size());
  std::vector<const AgentRecord*> records;
  std::vector<std::optional<ResumedAgent>> resumed(agents.size());
  for (std::size_t k = 0; k < agents.size(); ++k) {
    Agent& agent = agents[k];
    records.push_back(&agent);
    const rl::TrainConfig& config = plan.agents[k].config;
    prepare_agent(agent, plan, folder.dir(), k);
    if (resume) resumed[k] = read_resumed_agent(folder.dir(), k);
    agent.engine = make_engine(config.scenario, plan.device, config.num_envs, config.seed, agent.physics);
    agent.frames = make_frame_store(*agent.engine, config.pixel_observations(), config.num_steps, config.frame_size,
                                    config.grayscale, config.frame_stack);
    agent.trainer = std::make_unique<rl::Trainer>(*agent.engine, config, ranks, agent.frames.get());
    if (resumed[k]) {
      resumed[k]->state.restore(resumed[k]->checkpoint, *agent.trainer, *agent.engine);
      resumed[k]->drop_restored();
    }
  }
  // Every checkpoint read and restored: only now is any agent's file rewritten.
  std::filesystem::create_directories(folder.dir() + "/tb");
  for (std::size_t k = 0; k < agents.size(); ++k)
    open_agent_outputs(agents[k], plan, folder.dir(), k, resumed[k] ? &*resumed[k] : nullptr);
  resumed.clear();
  write_agents_manifest(folder.dir(), records);
  write_combined_metrics(folder.dir(), records);
  folder.keep();

  const std::int64_t iterations = agents.front().trainer->num_iterations();
  std::int64_t done = most_done(records);  // the most iterations any agent has done
  say_device_notice();
  std::cerr << start_line(records, plan, iterations, done,
                          plan.device.is_cpu()
                              ? ", " + plural(rl::agent_threads(agents.size()), "thread") + " across the agents"
                              : std::string(),
                          folder.dir())
            << "\n";

  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double wall_offset = earlier_wall_time(records);
  auto consume = [&](Agent& agent, const std::vector<rl::IterationMetrics>& ready) {
    agent.add_rows(ready, seconds_since_start(), wall_offset, plan.target);
  };
  auto save_checkpoint = [&](Agent& agent, const std::string& name) {
    consume(agent, agent.trainer->drain());
    rl::ResumeState state = rl::ResumeState::capture(*agent.trainer, *agent.engine);
    state.metrics_columns = TrainOutput::columns();
    state.metrics_rows = agent.output->rows();
    try {
      rl::write_resumable_checkpoint(agent.dir + "/" + name, *agent.trainer, state);
      return true;
    } catch (const std::exception& e) {
      std::cerr << "surge train: could not write " << agent.dir << "/" << name << " (" << e.what() << ")\n";
      return false;
    }
  };

  // Each agent does what `surge train --seed s_k` alone does after an iteration: its rows, its evaluation
  // (best.h5 when it is the best so far), and with --target-return, once it has reached the target, it
  // stops there: its last rows and checkpoint are written and it iterates no more.
  // On the CPU a round is up to rl::kAgentIterationsPerRound iterations of each agent, back to back on one thread
  // that also adds the agent's rows (metrics.csv, TensorBoard) after each; an agent's run of iterations
  // ends early at an iteration after which the host has work for it (evaluation, target, checkpoint); a
  // stop signal ends the run after the round. With --target-mode any or median the run ends in the round
  // that meets the mode, so there every agent does one iteration per round, as on CUDA.
  StopSignals signals;
  bool stop = false, written = true, said_fallback = false;
  RoundEnd round_end;
  const std::int64_t per_round = plan.device.is_cpu() && (std::isnan(plan.target) || plan.mode == TargetMode::All)
                                     ? rl::kAgentIterationsPerRound
                                     : 1;
  auto host_work_after = [&](const Agent& agent) {
    return agent.evaluator->due(agent.done) || (!std::isnan(plan.target) && !std::isnan(agent.target_time)) ||
           (plan.checkpoint_every > 0 && agent.done % plan.checkpoint_every == 0 && agent.done < iterations);
  };
  auto after_iteration = [&](Agent& agent) {
    ++agent.done;
    ++agent.this_run;
    consume(agent, agent.trainer->ready_metrics());
    return !host_work_after(agent);
  };
  std::vector<Agent*> active;
  std::vector<rl::Trainer*> trainers;
  std::vector<std::int64_t> limits;
  rl::AgentIterations iterations_of_all(plan.device);  // after the agents: it waits for its work first
  while (!stop && !signals.requested()) {
    active.clear();
    trainers.clear();
    limits.clear();
    for (Agent& agent : agents) {
      std::int64_t limit = std::min(per_round, iterations - agent.done);
      if (plan.stop_after >= 0) limit = std::min(limit, plan.stop_after - agent.this_run);
      if (agent.paused || limit <= 0) continue;
      active.push_back(&agent);
      trainers.push_back(agent.trainer.get());
      limits.push_back(limit);
    }
    if (active.empty()) break;
    if (plan.device.is_cpu()) {
      rl::iterate_agents_for(trainers, limits, [&](std::size_t k) { return after_iteration(*active[k]); });
    } else {
      iterations_of_all.iterate(trainers);
      for (Agent* agent : active) after_iteration(*agent);
      if (!said_fallback && !iterations_of_all.fallback().empty()) {
        std::cerr << "surge train: could not capture " << iterations_of_all.fallback()
                  << "; the agents go on without that graph, their kernels launched one by one\n";
        said_fallback = true;
      }
    }
    bool saved = false;
    for (Agent* agent : active) {
      done = std::max(done, agent->done);
      if (agent->evaluator->due(agent->done)) {
        iterations_of_all.settle();
        consume(*agent, agent->trainer->drain());
        const double best = agent->output->best_eval();
        const EvalResult eval = agent->evaluator->run(*agent->trainer, agent->done);
        agent->output->set_eval(eval.mean, eval.std);
        if (agent->best_checkpoints && !(eval.mean <= best) && rl::checkpoints_available())
          agent->best_checkpoints = save_checkpoint(*agent, "best.h5");
      }
      agent->output->append_rows();
      if (!std::isnan(plan.target) && !std::isnan(agent->target_time)) {
        iterations_of_all.settle();
        agent->paused = true;
        consume(*agent, agent->trainer->drain());
        written = agent->output->append_rows(true) && written;
        if (rl::checkpoints_available()) written = save_checkpoint(*agent, "checkpoint.h5") && written;
      } else if (plan.checkpoint_every > 0 && agent->done % plan.checkpoint_every == 0 && agent->done < iterations) {
        iterations_of_all.settle();
        save_checkpoint(*agent, "checkpoint.h5");
        saved = true;
      }
    }
    stop = round_end(records, plan, folder.dir(), done, iterations, seconds_since_start(), wall_offset, saved);
  }
  iterations_of_all.settle();
  for (Agent& agent : agents)
    if (!agent.paused) consume(agent, agent.trainer->drain());
  signals.shield();  // what follows is written whole: a further Ctrl-C waits for it
  for (Agent& agent : agents)
    if (!agent.paused) written = agent.output->append_rows(true) && written;
  if (rl::checkpoints_available()) {
    for (Agent& agent : agents)
      if (!agent.paused) written = save_checkpoint(agent, "checkpoint.h5") && written;
  } else {
    std::cerr << "surge train: this build has no HDF5, so no checkpoints were written (install libhdf5-dev and "
                 "rebuild)\n";
  }
  return finish_agents(records, plan, folder.dir(), done, iterations, seconds_since_start() + wall_offset, stop,
                       written, signals);
}

}  // namespace surge::cli
