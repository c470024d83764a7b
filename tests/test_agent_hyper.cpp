// rl/agent_hyper: the grid-variable scalars live in a device array that the learner's kernels read. The
// array holds exactly the config's (and a grid point's) values; a value changed in the array changes
// what the kernels compute exactly as the same value given in the config does; a grid's agents, through
// the API and through `surge train --agents --grid`, get their own values.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "rl/agent_grid.hpp"
#include "rl/agent_hyper.hpp"
#include "rl/gae.hpp"
#include "rl/trainer.hpp"
#include "scenarios/registry.hpp"
#include "sim/memory.hpp"
#include "sim/philox.hpp"
#include "tests/support/run_surge.hpp"
#include "tests/support/scratch_folder.hpp"
#include "tests/support/small_train_config.hpp"

namespace {

using surge::Device;
using surge::Stream;
using surge::rl::AgentHyper;
using surge::rl::TrainConfig;
using surge::rl::Trainer;

AgentHyper read_hyper(const Trainer& trainer) {
  const std::vector<AgentHyper> hyper = surge::to_host(trainer.agent_hyper(), trainer.stream());
  REQUIRE(hyper.size() == 1);  // K = 1 per trainer
  return hyper[0];
}

void write_hyper(const Trainer& trainer, const AgentHyper& values) {
  surge::from_host(trainer.agent_hyper(), std::vector<AgentHyper>{values}, trainer.stream());
}

// Every field, exactly.
void check_equal(const AgentHyper& a, const AgentHyper& b) {
  CHECK(a.learning_rate == b.learning_rate);
  CHECK(a.anneal_lr == b.anneal_lr);
  CHECK(a.clip_coef == b.clip_coef);
  CHECK(a.ent_coef == b.ent_coef);
  CHECK(a.vf_coef == b.vf_coef);
  CHECK(a.clip_vloss == b.clip_vloss);
  CHECK(a.norm_adv == b.norm_adv);
  CHECK(a.gamma == b.gamma);
  CHECK(a.gae_lambda == b.gae_lambda);
  CHECK(a.max_grad_norm == b.max_grad_norm);
  CHECK(a.adam_eps == b.adam_eps);
  CHECK(a.target_kl == b.target_kl);
  CHECK(a.obs_clip == b.obs_clip);
  CHECK(a.reward_clip == b.reward_clip);
}

// A config whose every grid-variable scalar differs from its default.
TrainConfig unusual_config(std::uint64_t seed) {
  TrainConfig config = surge::testing::small_train_config(8, 16, 3, {16, 16}, seed);
  config.learning_rate = 7.5e-4;
  config.anneal_lr = false;
  config.clip_coef = 0.15;
  config.ent_coef = 0.003;
  config.vf_coef = 0.7;
  config.clip_vloss = false;
  config.norm_adv = false;
  config.gamma = 0.97;
  config.gae_lambda = 0.9;
  config.max_grad_norm = 0.3;
  config.adam_eps = 1e-7;
  config.target_kl = 0.05;
  config.obs_clip = 5.0;
  config.reward_clip = 4.0;
  return config;
}

// A trainer of its own engine.
struct Run {
  std::unique_ptr<surge::Engine> engine;
  std::unique_ptr<Trainer> trainer;
  Run(const std::string& scenario, const TrainConfig& config)
      : engine(surge::make_engine(scenario, Device::cpu(), config.num_envs, config.seed)),
        trainer(std::make_unique<Trainer>(*engine, config)) {}

  // Parameters after `iterations` iterations, and the learning rate and losses of each.
  std::vector<double> train(int iterations) {
    for (int k = 0; k < iterations; ++k) trainer->iterate();
    std::vector<double> out;
    for (const auto& m : trainer->drain()) {
      out.push_back(m.learning_rate);
      out.push_back(m.policy_loss);
      out.push_back(m.value_loss);
      out.push_back(m.epochs_applied);
    }
    for (float p : surge::to_host(trainer->parameters(), trainer->stream())) out.push_back(p);
    return out;
  }
};

// Line `line` of a CSV text, split at its commas.
std::vector<std::string> fields(const std::string& csv, int line) {
  std::size_t begin = 0;
  for (int k = 0; k < line; ++k) begin = csv.find('\n', begin) + 1;
  std::stringstream text(csv.substr(begin, csv.find('\n', begin) - begin));
  std::vector<std::string> out;
  for (std::string field; std::getline(text, field, ',');) out.push_back(field);
  return out;
}

}  // namespace

TEST_CASE("a trainer's device array holds exactly its config's scalars, listed in its memory plan") {
  const TrainConfig config = unusual_config(3);
  Run run("cartpole", config);
  const AgentHyper held = read_hyper(*run.trainer);
  check_equal(held, surge::rl::agent_hyper(config));
  CHECK(held.learning_rate == 7.5e-4);
  CHECK(held.anneal_lr == 0.0);
  CHECK(held.clip_vloss == 0.0);
  CHECK(held.norm_adv == 0.0);
  CHECK(held.gamma == 0.97);
  CHECK(held.adam_eps == 1e-7);
  CHECK(held.reward_clip == 4.0);

  const surge::MemoryPlan plan = Trainer::memory_plan(config, run.trainer->spec(), Device::cpu());
  bool listed = false;
  for (const auto& buffer : plan.buffers())
    if (buffer.name == "learner.hyper") {
      listed = true;
      CHECK(buffer.shape == "[K]");
      CHECK(buffer.elements == 1);
    }
  CHECK(listed);
  CHECK(plan.allocated_bytes() == run.trainer->device_bytes());
}

TEST_CASE("GAE reads gamma and lambda from the agent's entry of the array") {
  const std::int64_t steps = 12, envs = 5, slots = steps * envs;
  std::vector<float> reward(slots), value(slots + envs), final_value(slots);
  std::vector<std::uint8_t> terminated(slots), truncated(slots);
  surge::Rng rng(11, 0, 0);
  for (auto& x : reward) x = rng.uniform(-1.0f, 1.0f);
  for (auto& x : value) x = rng.uniform(-2.0f, 2.0f);
  for (auto& x : final_value) x = rng.uniform(-2.0f, 2.0f);
  for (std::int64_t s = 0; s < slots; ++s) {
    const float u = rng.uniform();
    terminated[s] = u < 0.1f ? 1 : 0;
    truncated[s] = (u >= 0.05f && u < 0.15f) ? 1 : 0;
  }
  // The recursion in double: the reference for a given gamma and lambda.
  auto reference = [&](double gamma, double lambda) {
    std::vector<double> adv(slots);
    for (std::int64_t i = 0; i < envs; ++i) {
      double running = 0.0;
      for (std::int64_t t = steps - 1; t >= 0; --t) {
        const std::int64_t s = t * envs + i;
        const bool ended = terminated[s] || truncated[s];
        const double next = terminated[s] ? 0.0 : (truncated[s] ? final_value[s] : value[s + envs]);
        running = reward[s] + gamma * next - value[s] + (ended ? 0.0 : gamma * lambda * running);
        adv[s] = running;
      }
    }
    return adv;
  };
  const Stream stream(Device::cpu());
  // Two agents' entries; the kernel is given agent 1, whose entry the test rewrites between two runs.
  AgentHyper first{}, second{};
  first.gamma = 0.5;
  first.gae_lambda = 0.5;
  second.gamma = 0.99;
  second.gae_lambda = 0.95;
  surge::DeviceBuffer<AgentHyper> hyper(Device::cpu(), 2);
  auto gae = [&](const AgentHyper& agent_one) {
    surge::from_host(hyper.span(), std::vector<AgentHyper>{first, agent_one}, stream);
    std::vector<float> adv(slots), ret(slots);
    surge::rl::compute_gae(stream, steps, envs, hyper.data(), 1, reward.data(), terminated.data(), truncated.data(),
                           value.data(), final_value.data(), adv.data(), ret.data());
    stream.synchronize();
    return adv;
  };
  const std::vector<float> before = gae(second);
  AgentHyper changed = second;
  changed.gamma = 0.8;
  changed.gae_lambda = 0.7;
  const std::vector<float> after = gae(changed);
  CHECK(before != after);
  const std::vector<double> want_before = reference(0.99, 0.95), want_after = reference(0.8, 0.7);
  for (std::int64_t s = 0; s < slots; ++s) {
    CHECK(before[s] == Approx(want_before[s]).margin(1e-5).epsilon(1e-5));
    CHECK(after[s] == Approx(want_after[s]).margin(1e-5).epsilon(1e-5));
  }
  // Agent 0's entry, given as plain values, gives its own numbers.
  std::vector<float> adv(slots), ret(slots);
  surge::rl::compute_gae(stream, steps, envs, 0.5f, 0.5f, reward.data(), terminated.data(), truncated.data(),
                         value.data(), final_value.data(), adv.data(), ret.data());
  const std::vector<double> want_first = reference(0.5, 0.5);
  for (std::int64_t s = 0; s < slots; ++s) CHECK(adv[s] == Approx(want_first[s]).margin(1e-5).epsilon(1e-5));
}

TEST_CASE("a value written into the array trains exactly as the same value in the config") {
  // CartPole takes the CPU's fused update, its BLAS twin the separate loss and Adam kernels; Pendulum's
  // Gaussian policy the separate kernels too, with both normalisations (gamma and the clips).
  struct Case {
    std::string scenario;
    bool fused_mlp, normalize;
  };
  for (const Case& c : {Case{"cartpole", true, false}, Case{"cartpole", false, false}, Case{"pendulum", true, true}}) {
    INFO(c.scenario << (c.fused_mlp ? "" : ", BLAS") << (c.normalize ? ", normalised" : ""));
    TrainConfig base = surge::testing::small_train_config(8, 16, 3, {16, 16}, 5);
    base.cpu_fused_mlp = c.fused_mlp;
    base.normalize_obs = base.normalize_reward = c.normalize;
    TrainConfig other = unusual_config(5);
    other.cpu_fused_mlp = c.fused_mlp;
    other.normalize_obs = other.normalize_reward = c.normalize;
    // The trainer normalises its first observation when it is made, before the array is rewritten: the
    // observation clip is left as built here (its own case is below).
    other.obs_clip = base.obs_clip;
    other.reward_clip = 0.05;  // small enough to bite

    Run as_built(c.scenario, base), rewritten(c.scenario, base), from_config(c.scenario, other);
    write_hyper(*rewritten.trainer, surge::rl::agent_hyper(other));
    const std::vector<double> plain = as_built.train(3), changed = rewritten.train(3), wanted = from_config.train(3);
    CHECK(changed == wanted);
    CHECK(changed != plain);
  }
}

TEST_CASE("the observations are clipped at the clip written into the array") {
  TrainConfig config = surge::testing::small_train_config(8, 16, 1, {16, 16}, 7);
  config.normalize_obs = true;
  auto largest = [&](double obs_clip) {
    Run run("pendulum", config);
    AgentHyper hyper = read_hyper(*run.trainer);
    hyper.obs_clip = obs_clip;
    write_hyper(*run.trainer, hyper);
    run.train(1);
    // Rows 1 .. T, observed after the write (row 0 is the observation the trainer was made with).
    const surge::rl::RolloutStorage& rollout = run.trainer->rollout();
    const std::int64_t count = config.num_steps * config.num_envs * rollout.obs_dim();
    double most = 0.0;
    for (std::int64_t i = 0; i < count; ++i) most = std::max(most, std::fabs(static_cast<double>(rollout.obs(1)[i])));
    return most;
  };
  CHECK(largest(0.25) == Approx(0.25).epsilon(1e-6));
  CHECK(largest(10.0) > 0.5);
}

TEST_CASE("a learning rate of 0 written into the array leaves the parameters where they started") {
  const TrainConfig config = surge::testing::small_train_config(8, 16, 2, {16, 16}, 9);
  Run frozen("cartpole", config), trained("cartpole", config);
  const std::vector<float> initial = surge::to_host(frozen.trainer->parameters(), frozen.trainer->stream());
  AgentHyper hyper = read_hyper(*frozen.trainer);
  hyper.learning_rate = 0.0;
  write_hyper(*frozen.trainer, hyper);
  frozen.train(2);
  trained.train(2);
  CHECK(surge::to_host(frozen.trainer->parameters(), frozen.trainer->stream()) == initial);
  CHECK(surge::to_host(trained.trainer->parameters(), trained.trainer->stream()) != initial);
}

TEST_CASE("a grid's agents each hold their grid point's values") {
  TrainConfig base = surge::testing::small_train_config(8, 16, 2, {16, 16}, 21);
  base.num_agents = 2;
  const std::vector<surge::rl::AgentSpec> agents = surge::rl::expand_agents(
      base, {surge::rl::parse_grid_axis("lr=1e-3,3e-4"), surge::rl::parse_grid_axis("ent_coef=0,0.02")});
  REQUIRE(agents.size() == 8);
  const double lr[] = {1e-3, 1e-3, 3e-4, 3e-4}, ent[] = {0.0, 0.02, 0.0, 0.02};
  for (std::size_t k = 0; k < agents.size(); ++k) {
    INFO("agent " << k);
    Run run("cartpole", agents[k].config);
    const AgentHyper held = read_hyper(*run.trainer);
    CHECK(held.learning_rate == lr[k / 2]);
    CHECK(held.ent_coef == ent[k / 2]);
    check_equal(held, surge::rl::agent_hyper(agents[k].config));
  }
}

TEST_CASE("surge train --agents --grid: each agent's first iteration runs at its own learning rate") {
  // The learning rate in metrics.csv is what the kernel at the start of the iteration wrote from the
  // agent's entry of the array (annealed from iteration 2 on).
  const surge::testing::ScratchFolder folder("agent_hyper");
  const auto result = surge::testing::run_surge(
      "train --scenario cartpole --device cpu --agents 2 --grid lr=1e-3,3e-4 --grid ent_coef=0,0.02 "
      "--num-envs 8 --num-steps 16 --total-steps 256 --out " +
      folder / "run");
  REQUIRE(result.exit_code == 0);
  const double lr[] = {1e-3, 1e-3, 3e-4, 3e-4};
  for (int k = 0; k < 8; ++k) {
    INFO("agent " << k);
    const std::string csv =
        surge::testing::read_text(folder.path() / "run" / "agents" / std::to_string(k) / "metrics.csv");
    const std::vector<std::string> header = fields(csv, 0), first_row = fields(csv, 1);
    const auto column = std::find(header.begin(), header.end(), "learning_rate");
    REQUIRE(column != header.end());
    const double value = std::stod(first_row.at(static_cast<std::size_t>(column - header.begin())));
    CHECK(value == Approx(lr[k / 2]).epsilon(1e-9));
  }
  const auto plan = surge::testing::run_surge("train --scenario cartpole --device cpu --dry-run");
  CHECK(plan.exit_code == 0);
  CHECK(plan.output().find("learner.hyper") != std::string::npos);
}
