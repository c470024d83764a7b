// `surge train --agents K --learner batched`: one engine of K agents and one BatchedTrainer (every launch
// serving all of them), with the outputs of one learner per agent (tools/cli/train_agents_output.hpp).
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>

#include "rl/batched_trainer.hpp"
#include "rl/collective.hpp"
#include "rl/io/checkpoint.hpp"
#include "rl/io/resume_state.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/train_agents.hpp"
#include "tools/cli/train_agents_output.hpp"

namespace surge::cli {
namespace {

// Agent k's checkpoint, the file its run alone writes: the agent, then /resume with the trainer's saved
// entries (less the agent's own), agent k's environments and its rows.
bool save_agent_checkpoint(rl::BatchedTrainer& trainer, Engine& engine, const AgentRecord& agent, int k,
                           const std::string& name) {
  const std::string path = agent.dir + "/" + name;
  try {
    const rl::ActorCritic& network = trainer.network();
    const rl::TrainConfig& config = trainer.config(k);
    rl::Checkpoint checkpoint;
    checkpoint.scenario = engine.spec().name;
    checkpoint.gym_id = engine.spec().gym_id;
    checkpoint.obs_dim = network.obs_dim();
    checkpoint.num_actions = network.num_actions();
    checkpoint.action_dim = network.action_dim();
    checkpoint.config = config;
    checkpoint.iteration = trainer.train_state(k).iteration;
    checkpoint.global_step = checkpoint.iteration * config.batch_size();
    checkpoint.params = to_host(trainer.parameters(k), trainer.stream());
    checkpoint.adam_m = to_host(trainer.adam_first_moment(k), trainer.stream());
    checkpoint.adam_v = to_host(trainer.adam_second_moment(k), trainer.stream());
    const rl::OptimizerScalars optimizer = trainer.optimizer_scalars(k);
    checkpoint.adam_step = optimizer.step;
    checkpoint.learning_rate = optimizer.learning_rate;
    checkpoint.obs_moments = to_host(trainer.obs_moments(k), trainer.stream());
    checkpoint.reward_moments = to_host(trainer.reward_moments(k), trainer.stream());
    rl::ResumeState state;
    for (SavedBuffer& buffer : trainer.save_state(k))
      if (!buffer.agent) state.trainer.push_back(std::move(buffer));
    state.engine = engine.save_agent_state(k, trainer.stream());
    state.metrics_columns = TrainOutput::columns();
    state.metrics_rows = agent.output->rows();
    rl::write_resumable_checkpoint(path, checkpoint, state);
    return true;
  } catch (const std::exception& e) {
    std::cerr << "surge train: could not write " << path << " (" << e.what() << ")\n";
    return false;
  }
}

}  // namespace

int train_agents_batched(const AgentsPlan& plan, const std::string& out_dir) {
  const std::unique_ptr<rl::Collective> ranks = rl::open_collective(plan.device);
  if (ranks->size() > 1)
    throw InputError("surge train: --agents and --grid run in one process; run them without mpirun");
  RunFolder folder(out_dir, plan.reuse, "surge train");
  const bool resume = plan.reuse == RunFolder::Reuse::Resume;
  const std::size_t count = plan.agents.size();
  std::vector<AgentRecord> agents(count);
  std::vector<const AgentRecord*> records;
  std::vector<std::optional<ResumedAgent>> resumed(count);
  std::vector<rl::TrainConfig> configs;
  std::vector<EngineAgent> engine_agents;
  for (std::size_t k = 0; k < count; ++k) {
    prepare_agent(agents[k], plan, folder.dir(), k);
    if (resume) resumed[k] = read_resumed_agent(folder.dir(), k);
    records.push_back(&agents[k]);
    configs.push_back(agents[k].spec.config);
    engine_agents.push_back({configs.back().seed, agents[k].physics});
  }
  const rl::TrainConfig& first = configs.front();
  const auto engine = make_engine(first.scenario, plan.device, first.num_envs, engine_agents);
  rl::BatchedTrainer trainer(*engine, configs);
  for (std::size_t k = 0; k < count; ++k) {
    if (!resumed[k]) continue;
    const rl::Checkpoint& checkpoint = resumed[k]->checkpoint;
    rl::require_scenario(checkpoint, engine->spec());
    if (resumed[k]->state.ranks != 1 || !resumed[k]->state.other_ranks.empty())
      throw InputError("checkpoint '" + checkpoint.path + "' was written by " +
                       std::to_string(resumed[k]->state.ranks) + " ranks; resume it with mpirun -np " +
                       std::to_string(resumed[k]->state.ranks) + " and --learner separate");
    try {  // the environments first: the trainer observes them
      const int agent = static_cast<int>(k);
      engine->restore_agent_state(agent, resumed[k]->state.engine, "its environment state", trainer.stream());
      trainer.restore_state(agent, resumed[k]->state.trainer_state(checkpoint));
    } catch (const InputError& error) {
      throw InputError("checkpoint '" + checkpoint.path + "': " + error.what());
    }
    resumed[k]->drop_restored();
  }
  // Every checkpoint read and restored: only now is any agent's file rewritten.
  std::filesystem::create_directories(folder.dir() + "/tb");
  for (std::size_t k = 0; k < count; ++k)
    open_agent_outputs(agents[k], plan, folder.dir(), k, resumed[k] ? &*resumed[k] : nullptr);
  write_agents_manifest(folder.dir(), records);
  write_combined_metrics(folder.dir(), records);
  folder.keep();

  const std::int64_t iterations = trainer.num_iterations();
  std::int64_t done = most_done(records);
  say_device_notice();
  std::cerr << start_line(records, plan, iterations, done, ", one batched learner", folder.dir()) << "\n";
  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const double wall_offset = earlier_wall_time(records);

  // Every iteration computes every agent; an agent's rows are recorded while it is open: not at the target
  // (paused), with iterations left, within --stop-after. Once it closes its last rows and checkpoint are
  // written, and what the batch computes for it afterwards is dropped, so its outputs are its run alone's.
  auto open = [&](const AgentRecord& agent) {
    return !agent.paused && agent.done < iterations && (plan.stop_after < 0 || agent.this_run < plan.stop_after);
  };
  std::vector<bool> closed(count);
  for (std::size_t k = 0; k < count; ++k) closed[k] = !open(agents[k]);
  StopSignals signals;
  bool stop = false, written = true;
  RoundEnd round_end;
  while (!stop && !signals.requested()) {
    std::vector<std::size_t> active;
    for (std::size_t k = 0; k < count; ++k)
      if (!closed[k]) active.push_back(k);
    if (active.empty()) break;
    // On CUDA the metrics come one iteration late unless the host needs this iteration's (a target to check,
    // an evaluation, a checkpoint, an agent closing): then it waits for them. An agent closes only after such
    // a wait, so the rows pending for an open agent are all its own.
    bool host_work = plan.device.is_cpu() || !std::isnan(plan.target);
    for (const std::size_t k : active) {
      const AgentRecord& agent = agents[k];
      const std::int64_t next = agent.done + 1;
      host_work = host_work || agent.evaluator->due(next) || next >= iterations ||
                  (plan.stop_after >= 0 && agent.this_run + 1 >= plan.stop_after) ||
                  (plan.checkpoint_every > 0 && next % plan.checkpoint_every == 0);
    }
    trainer.iterate();
    const std::vector<std::vector<rl::IterationMetrics>> ready = host_work ? trainer.drain() : trainer.ready_metrics();
    bool saved = false;
    for (const std::size_t k : active) {
      AgentRecord& agent = agents[k];
      const int id = static_cast<int>(k);
      ++agent.done;
      ++agent.this_run;
      done = std::max(done, agent.done);
      agent.add_rows(ready[k], seconds_since_start(), wall_offset, plan.target);
      if (agent.evaluator->due(agent.done)) {
        const double best = agent.output->best_eval();
        const EvalResult eval = agent.evaluator->run(trainer.network(), trainer.parameters(id), trainer.obs_moments(id),
                                                     trainer.stream(), trainer.config(id), agent.done);
        agent.output->set_eval(eval.mean, eval.std);
        if (agent.best_checkpoints && !(eval.mean <= best) && rl::checkpoints_available())
          agent.best_checkpoints = save_agent_checkpoint(trainer, *engine, agent, id, "best.h5");
      }
      agent.output->append_rows();
      if (!std::isnan(plan.target) && !std::isnan(agent.target_time)) agent.paused = true;
      if (!open(agent)) {
        closed[k] = true;
        written = agent.output->append_rows(true) && written;
        if (rl::checkpoints_available())
          written = save_agent_checkpoint(trainer, *engine, agent, id, "checkpoint.h5") && written;
      } else if (plan.checkpoint_every > 0 && agent.done % plan.checkpoint_every == 0) {
        save_agent_checkpoint(trainer, *engine, agent, id, "checkpoint.h5");
        saved = true;
      }
    }
    stop = round_end(records, plan, folder.dir(), done, iterations, seconds_since_start(), wall_offset, saved);
  }
  const std::vector<std::vector<rl::IterationMetrics>> rest = trainer.drain();
  signals.shield();  // what follows is written whole: a further Ctrl-C waits for it
  for (std::size_t k = 0; k < count; ++k) {
    if (closed[k]) continue;
    agents[k].add_rows(rest[k], seconds_since_start(), wall_offset, plan.target);
    written = agents[k].output->append_rows(true) && written;
    if (rl::checkpoints_available())
      written = save_agent_checkpoint(trainer, *engine, agents[k], static_cast<int>(k), "checkpoint.h5") && written;
  }
  if (!rl::checkpoints_available())
    std::cerr << "surge train: this build has no HDF5, so no checkpoints were written (install libhdf5-dev and "
                 "rebuild)\n";
  return finish_agents(records, plan, folder.dir(), done, iterations, seconds_since_start() + wall_offset, stop,
                       written, signals);
}

}  // namespace surge::cli
