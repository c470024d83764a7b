#pragma once
// The trainer's configuration: every key a TOML config file or `--set key=value` may give, with
// CleanRL's ppo.py names and meanings where it has them.
#include <cstdint>
#include <string>
#include <vector>

#include "rl/learner_configs.hpp"
#include "sim/physics_settings.hpp"

namespace surge::rl {

// One config of the whole run. The learner's parts are its bases (rl/learner_configs.hpp): the network,
// loss, optimiser and normalisation each take a reference to their part of it.
struct TrainConfig : NetworkConfig, PpoLossConfig, AdamConfig, NormalizationConfig {
  std::string scenario;  // the scenario trained on; empty in a config that leaves it to --scenario
  // Rollout
  std::int64_t num_envs = 4;
  std::int64_t num_steps = 128;       // T: steps per environment per iteration
  std::int64_t total_steps = 500000;  // env steps in the whole run (rounded down to whole iterations)
  std::uint64_t seed = 1;
  // Independent learners in one process (docs/agents.md): seeds per grid point, seed + 0 .. seed + K-1.
  std::int64_t num_agents = 1;
  // PPO
  double learning_rate = 2.5e-4;
  bool anneal_lr = true;  // linearly to 0 over the run
  double gae_lambda = 0.95;
  std::int64_t num_minibatches = 4;
  std::int64_t update_epochs = 4;
  double target_kl = 0.0;  // 0: no early stop
  // Evaluation during training: every eval_every iterations (0: never), eval_episodes greedy episodes
  // on environments of their own, so the learner's environments are untouched.
  std::int64_t eval_every = 0;
  std::int64_t eval_episodes = 32;
  // Runtime
  bool cuda_graph = true;        // capture an iteration as a CUDA graph and replay it
  std::int64_t cpu_threads = 0;  // CPU backend: OpenMP and OpenBLAS threads; 0: 1 below 4096 envs, else all cores
  double rank_timeout_s = 60.0;  // under mpirun: how long a rank waits in a sum for the others before the job stops
  // Observations: "vector" (the scenario's own) or "pixels": frames drawn by the scenario's renderer,
  // frame_size x frame_size (square: the scene is scaled to fit, as Atari preprocessing does), grey or
  // RGB, the last frame_stack of them stacked (scenarios/pixel_obs.hpp). Pixels train on the CPU backend.
  std::string observation = "vector";
  std::int64_t frame_size = 84;
  bool grayscale = true;
  std::int64_t frame_stack = 4;
  // The pixel policy's CNN trunk (rl/cnn_encoder.hpp): "nature" (CleanRL's Atari encoder) or "small".
  std::string encoder = "nature";
  // Physics: the [physics] table, by parameter name; checked against the scenario by resolve_physics().
  PhysicsSettings physics;

  std::int64_t batch_size() const { return num_envs * num_steps; }
  std::int64_t minibatch_size() const { return batch_size() / num_minibatches; }
  std::int64_t num_iterations() const { return total_steps / batch_size(); }
  bool pixel_observations() const { return observation == "pixels"; }

  // Throws InputError (one line naming the key, the value and what is allowed) when a value or a
  // combination is out of range: a batch not divisible into minibatches, fewer steps than one batch...
  // Sizes are bounded (num_envs <= 2^32, num_steps <= 2^24, num_envs x num_steps <= 2^36, total_steps
  // <= 2^50, at most 64 hidden layers) and multiplied without overflow, so that batch_size() and every
  // size of the memory plan fit in 64 bits once this has passed.
  void validate() const;
  // Every key with its value (then the [physics] table, if any), as TOML that load_train_config()
  // reads back to the same config.
  std::string to_toml() const;
};

// Throws InputError when the config asks for what training cannot do yet (pixel observations with
// normalize_obs).
void require_trainable(const TrainConfig& config);

// Keys in the order to_toml() writes them.
std::vector<std::string> train_config_keys();

// Builds a config from TOML text: the built-in defaults above, then the file's top-level keys, then
// its [cuda] table when `on_cuda`, then its [presets.<preset>] table when `preset` is not empty. Each
// of these may hold a [physics] table (masspole = 0.2 fixes a value, masspole = [0.05, 0.2] draws
// U(0.05, 0.2) per env at every reset), merged by parameter name.
// Unknown keys, values of the wrong type (a number key must be finite and fit float32, in which the
// learner computes), an unknown preset and TOML syntax errors throw InputError naming `source` (the
// file name); echoed input is cut short (format_excerpt). Does not validate(): flags and --set may still change it.
TrainConfig load_train_config(const std::string& toml_text, const std::string& source, bool on_cuda,
                              const std::string& preset);

// Whether the text's top level sets `key` (a config written before the key existed does not).
bool train_config_sets(const std::string& toml_text, const std::string& source, const std::string& key);

// Presets the text defines.
std::vector<std::string> train_config_presets(const std::string& toml_text, const std::string& source);

// Applies one `key=value` (the value in TOML syntax; a bare word is taken as a string, and hidden
// also accepts "64,64"; physics.NAME=0.2 or physics.NAME=[0.05,0.2] sets one physics parameter).
// Throws InputError for an unknown key, a bad value, or a line break (one key per --set).
void apply_config_setting(TrainConfig& config, const std::string& setting);

// Applies one value (TOML syntax, as apply_config_setting reads it) to `key` (a config key or
// physics.NAME); InputError messages start with `where` (the option that gave it).
void apply_config_value(TrainConfig& config, const std::string& key, std::string value, const std::string& where);

}  // namespace surge::rl
