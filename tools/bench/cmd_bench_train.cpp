// surge bench train: end-to-end PPO throughput (rollout, GAE and updates), with CUDA graphs on and off.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "rl/agent_set.hpp"
#include "rl/batched_trainer.hpp"
#include "rl/collective.hpp"
#include "rl/precision.hpp"
#include "rl/train_config.hpp"
#include "rl/trainer.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "scenarios/train_configs.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory_plan.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/json.hpp"
#include "tools/cli/physics_option.hpp"
#include "tools/cli/train_setup.hpp"
#include "tools/cli/version.hpp"

namespace surge::cli {
namespace {

constexpr int kWarmupIterations = 2;  // the eager first iteration, and the one that captures the graph

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

struct Measurement {
  std::vector<double> rates;  // env-steps/s of each timed repeat, over every rank under mpirun
  double median = 0;
  double communication_s = 0, waiting_s = 0, timed_s = 0;  // all-reduces, waits in them, wall time (timed repeats)
  // Of each timed repeat: the process's CPU time (user + system, every thread) per env-step of this rank,
  // and over the repeat's wall time (the cores it kept busy).
  std::vector<double> cpu_us_per_step, cores_busy;
};

// The CPU time (user + system) of every thread of this process so far.
double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// Whole iterations back to back, timed from the first enqueue until the device has finished the last.
// With several agents, each is an engine and a trainer of its own (seeds seed, seed + 1, ...), their
// iterations side by side as `surge train --agents` runs them (on the CPU, a repeat's iterations of an
// agent back to back between two joins); the rate counts every agent's steps.
Measurement measure(const std::string& scenario, Device device, const rl::TrainConfig& config, int repeats,
                    std::int64_t iterations, std::int64_t agents) {
  const std::unique_ptr<rl::Collective> ranks = rl::open_collective(device, true);  // one process unless under mpirun
  const PhysicsConfig physics = resolve_physics(scenario_spec(scenario), config.physics);
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<std::unique_ptr<PixelFrameStore>> frames;  // pixel observations: one store per agent
  std::vector<std::unique_ptr<rl::Trainer>> owned;
  std::vector<rl::Trainer*> trainers;
  for (std::int64_t a = 0; a < agents; ++a) {
    rl::TrainConfig agent = config;
    agent.seed = config.seed + static_cast<std::uint64_t>(a);
    engines.push_back(
        make_engine(scenario, device, agent.num_envs, agent.seed, physics, ranks->rank() * agent.num_envs));
    frames.push_back(make_frame_store(*engines.back(), agent.pixel_observations(), agent.num_steps, agent.frame_size,
                                      agent.grayscale, agent.frame_stack));
    owned.push_back(std::make_unique<rl::Trainer>(*engines.back(), agent, *ranks, frames.back().get()));
    trainers.push_back(owned.back().get());
  }
  rl::AgentIterations iterations_of_all(device);  // after the trainers: it waits for its work first
  auto iterate = [&] {
    if (agents == 1)
      trainers.front()->iterate();
    else
      iterations_of_all.iterate(trainers);
    for (rl::Trainer* trainer : trainers) trainer->ready_metrics();  // as surge train reads them
  };
  for (int k = 0; k < kWarmupIterations; ++k) iterate();
  for (rl::Trainer* trainer : trainers) trainer->drain();
  Measurement result;
  const double communication_before = ranks->communication_seconds(), waiting_before = ranks->waiting_seconds();
  // On the CPU the agents run their iterations of a repeat back to back, one join at the end, as a round
  // of surge train --agents does.
  const bool rounds = device.is_cpu() && agents > 1;
  const std::vector<std::int64_t> limits(trainers.size(), iterations);
  auto read_metrics = [&](std::size_t k) {
    trainers[k]->ready_metrics();
    return true;
  };
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    if (rounds)
      rl::iterate_agents_for(trainers, limits, read_metrics);
    else
      for (std::int64_t k = 0; k < iterations; ++k) iterate();
    for (rl::Trainer* trainer : trainers) trainer->drain();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_seconds = process_cpu_seconds() - cpu_start;
    result.cpu_us_per_step.push_back(1e6 * cpu_seconds /
                                     static_cast<double>(config.batch_size() * iterations * agents));
    result.cores_busy.push_back(cpu_seconds / seconds);
    result.rates.push_back(static_cast<double>(config.batch_size() * iterations * ranks->size() * agents) / seconds);
    result.timed_s += seconds;
  }
  result.communication_s = ranks->communication_seconds() - communication_before;
  result.waiting_s = ranks->waiting_seconds() - waiting_before;
  result.median = median_of(result.rates);
  return result;
}

// K agents in one batched learner (rl/batched_trainer.hpp): one engine of K agents, every launch serving all
// of them; timed as measure() times the agents of their own learners.
Measurement measure_batched(const std::string& scenario, Device device, const rl::TrainConfig& config, int repeats,
                            std::int64_t iterations, std::int64_t agents) {
  const PhysicsConfig physics = resolve_physics(scenario_spec(scenario), config.physics);
  std::vector<rl::TrainConfig> configs;
  std::vector<EngineAgent> engine_agents;
  for (std::int64_t a = 0; a < agents; ++a) {
    configs.push_back(config);
    configs.back().seed = config.seed + static_cast<std::uint64_t>(a);
    engine_agents.push_back({configs.back().seed, physics});
  }
  const std::unique_ptr<Engine> engine = make_engine(scenario, device, config.num_envs, engine_agents);
  rl::BatchedTrainer trainer(*engine, configs);
  for (int k = 0; k < kWarmupIterations; ++k) {
    trainer.iterate();
    trainer.ready_metrics();
  }
  trainer.drain();
  Measurement result;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_seconds();
    for (std::int64_t k = 0; k < iterations; ++k) {
      trainer.iterate();
      trainer.ready_metrics();  // as surge train reads them
    }
    trainer.drain();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_seconds = process_cpu_seconds() - cpu_start;
    const auto steps = static_cast<double>(config.batch_size() * iterations * agents);
    result.cpu_us_per_step.push_back(1e6 * cpu_seconds / steps);
    result.cores_busy.push_back(cpu_seconds / seconds);
    result.rates.push_back(steps / seconds);
    result.timed_s += seconds;
  }
  result.median = median_of(result.rates);
  return result;
}

// Builds the config, checks that it fits, measures and reports.
int bench_train(const Command& cmd) {
  const std::string scenario = cmd.get("scenario");
  const ScenarioSpec& spec = scenario_spec(scenario);
  const Device device = resolve_device(cmd.get("device"));
  const int repeats = static_cast<int>(cmd.get_int("repeats", 1, 1000));
  const std::int64_t agents = cmd.get_int("agents", 1, 65536);
  // With agents on the CPU a repeat is, by default, one round of surge train --agents.
  const std::int64_t iterations = cmd.has("iterations")           ? cmd.get_int("iterations", 1, 100000)
                                  : agents > 1 && device.is_cpu() ? rl::kAgentIterationsPerRound
                                                                  : 3;
  const std::string learner = cmd.get("learner");
  if (learner != "separate" && learner != "batched")
    throw InputError(cmd.complaint("--learner '" + format_excerpt(learner) + "' is neither 'separate' nor 'batched'"));
  const bool batched = learner == "batched";
  const std::string json_path = cmd.has("json") ? cmd.get("json") : "";
  if (!json_path.empty()) require_writable(json_path, "JSON report");

  const std::string preset = cmd.get_all("preset").empty() ? "" : cmd.get("preset");
  rl::TrainConfig config = rl::load_train_config(default_train_config(scenario), default_train_config_name(scenario),
                                                 device.is_cuda(), preset);
  // A preset's sizes stand unless --num-envs or --num-steps are given.
  if (preset.empty() || cmd.has("num-envs"))
    config.num_envs = cmd.has("num-envs") ? cmd.get_int("num-envs", 1, std::int64_t(1) << 32)
                                          : (device.is_cuda() ? std::int64_t(1) << 20 : 256);
  if (preset.empty() || !cmd.get_all("num-steps").empty()) config.num_steps = cmd.get_int("num-steps", 1, 1 << 20);
  set_physics(config.physics, physics_options(cmd));
  for (const std::string& setting : cmd.get_all("set")) rl::apply_config_setting(config, setting);
  const PhysicsConfig physics = resolve_physics(spec, config.physics);
  // The sizes first (validate() bounds the batch), then the run's length, each product checked.
  std::int64_t batch = 1;
  config.total_steps = __builtin_mul_overflow(config.num_envs, config.num_steps, &batch) ? 1 : batch;
  config.validate();
  const int rank_count = rl::rank_place().size;  // under mpirun total_steps counts every rank's steps
  const std::int64_t run_iterations = (kWarmupIterations + repeats * iterations) * rank_count;
  if (__builtin_mul_overflow(config.batch_size(), run_iterations, &config.total_steps) ||
      config.total_steps > (std::int64_t(1) << 50))
    throw InputError(cmd.complaint("N x T x (repeats x iterations + " + std::to_string(kWarmupIterations) + ") = " +
                                   std::to_string(config.batch_size()) + " x " + std::to_string(run_iterations) +
                                   " environment steps is more than 2^50; lower --repeats or --iterations"));
  // --precision fp32,bf16: each, side by side; every one must run here (the memory plan checks it).
  std::vector<std::string> precisions = {config.precision};
  if (cmd.has("precision")) {
    precisions.clear();
    std::stringstream list(cmd.get("precision"));
    for (std::string name; std::getline(list, name, ',');) {
      if (!rl::is_precision_name(name))
        throw InputError(cmd.complaint("--precision '" + format_excerpt(name) +
                                       "' is not fp32, tf32 or bf16 (give one, or several such as fp32,bf16)"));
      precisions.push_back(name);
    }
    if (precisions.empty()) throw InputError(cmd.complaint("--precision is empty; give fp32, bf16 or fp32,bf16"));
  }
  std::string why;
  for (const std::string& precision : precisions) {
    rl::TrainConfig each = config;
    each.precision = precision;
    if (batched && !rl::BatchedTrainer::supported(each, spec, &why))
      throw InputError(cmd.complaint("--learner batched: " + why + "; use --learner separate"));
  }
  if (batched && agents > rl::BatchedTrainer::kMaxAgents)
    throw InputError(cmd.complaint("--learner batched holds at most " + std::to_string(rl::BatchedTrainer::kMaxAgents) +
                                   " agents; use --learner separate"));
  // Every buffer is sized from the config: a run that would not fit stops here, as surge train does.
  MemoryPlan plan = engine_memory_plan(scenario, device, config.num_envs);
  for (const std::string& precision : precisions) {
    config.precision = precision;
    (void)rl::Trainer::memory_plan(config, spec, device);  // refuses a precision this machine cannot run
  }
  plan.append(rl::Trainer::memory_plan(config, spec, device));
  add_frame_store_plan(plan, config, spec);
  const MemoryPlan one = plan;
  for (std::int64_t a = 1; a < agents; ++a) plan.append(one);
  plan.require_fits("surge bench train on " + device.str(),
                    "lower --num-envs or --num-steps, or raise num_minibatches with --set");

  std::cerr << "surge bench train: " << scenario << " on " << device.str() << ", " << config.num_envs << " envs x "
            << config.num_steps << " steps" << (agents > 1 ? " x " + plural(agents, "agent") : std::string()) << ", "
            << config.update_epochs << " epochs x " << config.num_minibatches << " minibatches, " << repeats
            << " repeats of " << iterations << " iterations, physics: " << describe_physics(spec, physics) << "\n";
  const std::vector<bool> graphs = device.is_cuda() ? std::vector<bool>{true, false} : std::vector<bool>{false};
  std::vector<bool> graph_modes;
  std::vector<std::string> precision_modes;
  for (const std::string& precision : precisions)
    for (bool graph : graphs) {
      graph_modes.push_back(graph);
      precision_modes.push_back(precision);
    }
  // One precision: each mode's repeats in turn. Several: the repeats alternate between them, so that a
  // change in the machine's load falls on all of them alike.
  const bool alternate = precisions.size() > 1;
  std::vector<Measurement> results(graph_modes.size());
  for (int round = 0; round < (alternate ? repeats : 1); ++round)
    for (std::size_t k = 0; k < graph_modes.size(); ++k) {
      rl::TrainConfig run = config;
      run.cuda_graph = graph_modes[k];
      run.precision = precision_modes[k];
      const Measurement m = batched
                                ? measure_batched(scenario, device, run, alternate ? 1 : repeats, iterations, agents)
                                : measure(scenario, device, run, alternate ? 1 : repeats, iterations, agents);
      results[k].rates.insert(results[k].rates.end(), m.rates.begin(), m.rates.end());
      results[k].communication_s += m.communication_s;
      results[k].waiting_s += m.waiting_s;
      results[k].timed_s += m.timed_s;
      results[k].cpu_us_per_step.insert(results[k].cpu_us_per_step.end(), m.cpu_us_per_step.begin(),
                                        m.cpu_us_per_step.end());
      results[k].cores_busy.insert(results[k].cores_busy.end(), m.cores_busy.begin(), m.cores_busy.end());
    }
  for (Measurement& m : results) m.median = median_of(m.rates);

  std::string hidden;
  for (std::size_t k = 0; k < config.hidden.size();
       ++k) {  // appends: GCC 12 warns falsely (-Wrestrict) about "," + string
    if (k) hidden += ',';
    hidden += std::to_string(config.hidden[k]);
  }
  std::printf("scenario                  %s\n", spec.name.c_str());
  std::printf("device                    %s\n", device.str().c_str());
  std::printf("num_envs x steps          %lld x %lld (%lld epochs x %lld minibatches, hidden %s)\n",
              static_cast<long long>(config.num_envs), static_cast<long long>(config.num_steps),
              static_cast<long long>(config.update_epochs), static_cast<long long>(config.num_minibatches),
              hidden.c_str());
  // Pixels: what each env-step draws into the frame store (the frame and its first-of-episode flag), and
  // the stack the policy's forward pass gathers from it.
  const std::int64_t frame_bytes =
      config.pixel_observations() ? config.frame_size * config.frame_size * (config.grayscale ? 1 : 3) + 1 : 0;
  if (config.pixel_observations())
    std::printf(
        "pixels                    %lldx%lld %s, stack %lld, %s encoder: %lld bytes drawn per env-step, "
        "%lld gathered\n",
        static_cast<long long>(config.frame_size), static_cast<long long>(config.frame_size),
        config.grayscale ? "grey" : "RGB", static_cast<long long>(config.frame_stack), config.encoder.c_str(),
        static_cast<long long>(frame_bytes), static_cast<long long>((frame_bytes - 1) * config.frame_stack));
  if (batched)
    std::printf("agents                    %lld in one batched learner (env-steps/s of all together)\n",
                static_cast<long long>(agents));
  else if (agents > 1)
    std::printf("agents                    %lld, %d CPU threads across them (env-steps/s of all together)\n",
                static_cast<long long>(agents), device.is_cpu() ? rl::agent_threads(agents) : 0);
  for (std::size_t k = 0; k < results.size(); ++k) {
    const auto& r = results[k];
    std::string mode = device.is_cuda() ? (graph_modes[k] ? "graph on" : "graph off") : "cpu";
    if (cmd.has("precision")) mode += " " + precision_modes[k];
    std::printf("env-steps/s, %-12s %s   [min %s, max %s]\n", mode.c_str(), format_rate(r.median).c_str(),
                format_rate(*std::min_element(r.rates.begin(), r.rates.end())).c_str(),
                format_rate(*std::max_element(r.rates.begin(), r.rates.end())).c_str());
    // The rate is the CPU time per env-step over the cores kept busy: with several agents, a rate below
    // the threads' count times one agent's says which of the two fell short.
    if (device.is_cpu())
      std::printf("CPU per env-step, %-7s %s us, %s cores busy (user + system of all threads, medians)\n", mode.c_str(),
                  format_significant(median_of(r.cpu_us_per_step)).c_str(),
                  format_significant(median_of(r.cores_busy)).c_str());
  }
  if (results.size() == 2 && graphs.size() == 2)
    std::printf("graph speed-up            %.3gx\n", results[0].median / results[1].median);
  if (rank_count > 1)  // every rank prints its own: the wait for the others is part of its all-reduce time
    std::printf("rank %d of %d all-reduce    %s ms per iteration, %.3g%% of its time (%s ms of it waiting)\n",
                rl::rank_place().rank, rank_count,
                format_significant(1e3 * results[0].communication_s / (repeats * iterations)).c_str(),
                100.0 * results[0].communication_s / results[0].timed_s,
                format_significant(1e3 * results[0].waiting_s / (repeats * iterations)).c_str());

  if (!json_path.empty() && rl::rank_place().rank == 0) {
    JsonObject json = benchmark_json(SURGE_VERSION, "train", "", spec.name, device.str());
    json.add("num_envs", config.num_envs)
        .add("num_steps", config.num_steps)
        .add("agents", agents)
        .add("learner", learner)
        .add("update_epochs", config.update_epochs)
        .add("num_minibatches", config.num_minibatches)
        .add("hidden", hidden)
        .add("repeats", repeats)
        .add("iterations_per_repeat", iterations)
        .add("physics", physics_json(spec, physics))
        .add("observation", config.observation)
        .add("frame_bytes_per_step", frame_bytes);
    for (std::size_t k = 0; k < results.size(); ++k) {
      const std::string suffix = (device.is_cuda() ? (graph_modes[k] ? "_graph" : "_no_graph") : "") +
                                 (cmd.has("precision") ? "_" + precision_modes[k] : std::string());
      json.add("env_steps_per_s" + suffix, results[k].median)
          .add("env_steps_per_s" + suffix + "_runs", results[k].rates);
      if (device.is_cpu())
        json.add("cpu_us_per_env_step" + suffix, median_of(results[k].cpu_us_per_step))
            .add("cores_busy" + suffix, median_of(results[k].cores_busy));
    }
    write_atomically(json_path, json.str() + "\n");
  }
  rl::finish_ranks();
  return 0;
}

}  // namespace

int run_bench_train(const Args& args) {
  Command cmd("bench train",
              "Runs whole PPO iterations (T rollout steps of N environments, GAE, E epochs of M minibatch updates)\n"
              "as `surge train` does and reports end-to-end env-steps per second, the median over repeats.\n"
              "On CUDA it measures twice: replaying a CUDA graph of the iteration, and launching every kernel.");
  cmd.option("scenario", "NAME", "scenario", "cartpole")
      .option("device", "DEV", device_help(), "auto")
      .option("num-envs", "N", "environments [default: 1048576 on CUDA, 256 on the CPU]")
      .option("num-steps", "T", "steps per environment per iteration", "16")
      .option("agents", "K",
              "K independent learners side by side, as surge train --agents runs them (seeds seed .. seed+K-1); "
              "env-steps/s counts them all",
              "1")
      .option("learner", "KIND",
              "with --agents: 'separate' (one learner per agent, as surge train --agents runs them) or 'batched' "
              "(one learner whose every kernel serves all agents: vector observations, fp32, the GEMM path)",
              "separate")
      .option("preset", "NAME", "a preset of the scenario's config (e.g. cleanrl), its num_envs and num_steps included")
      .option("repeats", "R", "timed repeats; the median is reported", "5")
      .option("iterations", "I",
              "iterations back to back in one timed repeat [default: 3; with --agents above 1 on the CPU, 16: one "
              "round of surge train --agents]")
      .repeated("set", "KEY=VALUE", "set a config key of the scenario's built-in config (e.g. hidden=[64,64])")
      .option("precision", "LIST",
              "measure these precisions side by side, their repeats alternating: fp32, tf32 (CUDA), bf16, or "
              "several such as fp32,bf16 [default: the config's]")
      .option("json", "FILE", "also write the results as JSON");
  add_physics_option(cmd)
      .note(
          "The config is the scenario's built-in one (with its [cuda] table on a GPU); --num-envs, --num-steps\n"
          "--physics and --set change it. The first two iterations are not timed: the eager one, and the graph's "
          "capture.")
      .example("surge bench train --device cuda --num-envs 1048576 --json bench-train.json")
      .example("surge bench train --device cpu --num-envs 256 --num-steps 32")
      .example("surge bench train --device cpu --preset cleanrl --agents 64")
      .example("surge bench train --device cpu --num-envs 4 --num-steps 128 --precision fp32,bf16");
  if (!cmd.parse_or_print_usage(args)) return 0;
  return cmd.naming_errors([&] { return bench_train(cmd); });
}

}  // namespace surge::cli
