// surge eval: plays K episodes with a trained policy from a checkpoint and reports their returns.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "rl/actor_critic.hpp"
#include "rl/evaluate.hpp"
#include "rl/io/checkpoint.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/physics_option.hpp"

namespace surge::cli {

int run_eval(const Args& args) {
  Command cmd("eval",
              "Loads the policy from a checkpoint that `surge train` wrote and lets K environments play one\n"
              "episode each, choosing the most probable action or a Gaussian policy's mean (or, with --sample,\n"
              "drawing from the policy); continuous actions are clipped to their bounds.\n"
              "Prints the mean and standard deviation of the K returns.");
  cmd.option("checkpoint", "FILE", "checkpoint.h5 written by surge train", "", true)
      .option("episodes", "K", "episodes to play (one per environment, all at once)", "100")
      .option("device", "DEV", device_help(), "auto")
      .option("seed", "S", "seed of the environments' resets (and of the actions with --sample)", "12345")
      .flag("sample", "draw actions from the policy instead of taking the most probable one");
  add_physics_option(cmd)
      .note(
          "The environments run under the physics the policy was trained with (the checkpoint keeps it);\n"
          "--physics changes parameters by name on top of it, to test how robust the policy is.")
      .example("surge eval --checkpoint runs/cartpole/checkpoint.h5 --episodes 100")
      .example("surge eval --checkpoint runs/cartpole/checkpoint.h5 --episodes 1000 --sample --device cpu")
      .example("surge eval --checkpoint runs/dr/checkpoint.h5 --physics masspole=0.3");
  if (!cmd.parse(args)) {
    std::cout << cmd.usage();
    return 0;
  }
  const std::int64_t episodes = cmd.get_int("episodes", 1, std::int64_t(1) << 26);
  const std::uint64_t seed = cmd.get_u64("seed");
  const bool sample = cmd.flag_set("sample");
  const rl::Checkpoint checkpoint = cmd.naming_errors([&] {
    rl::Checkpoint read = rl::read_checkpoint(cmd.get("checkpoint"));
    rl::require_scenario(read, scenario_spec(read.scenario));
    return read;
  });
  const ScenarioSpec& spec = scenario_spec(checkpoint.scenario);
  PhysicsSettings physics_settings = checkpoint.config.physics;
  set_physics(physics_settings, physics_options(cmd));
  const PhysicsConfig physics = resolve_physics(spec, physics_settings);
  const Device device = resolve_device(cmd.get("device"));
  const rl::ActorCritic network = rl::checkpoint_network(checkpoint);
  Stream stream(device);
  DeviceBuffer<float> params(device, network.table().total());
  from_host(params.span(), checkpoint.params, stream);
  // A policy trained on normalised observations sees them normalised by its training statistics, frozen.
  DeviceBuffer<double> obs_moments(device, static_cast<std::int64_t>(checkpoint.obs_moments.size()));
  if (!checkpoint.obs_moments.empty()) from_host(obs_moments.span(), checkpoint.obs_moments, stream);
  const rl::FrozenObsNormalization normalization{obs_moments.cspan(), checkpoint.config.obs_clip};
  auto engine = make_engine(checkpoint.scenario, device, episodes, seed, physics);
  const std::vector<double> returns = rl::evaluate_policy(*engine, network, params.cspan(), sample, normalization);

  double mean = 0.0;
  for (double r : returns) mean += r;
  mean /= static_cast<double>(returns.size());
  double variance = 0.0;
  for (double r : returns) variance += (r - mean) * (r - mean);
  variance /= static_cast<double>(returns.size());
  const auto [low, high] = std::minmax_element(returns.begin(), returns.end());
  std::cout << "surge eval: " << checkpoint.scenario << ", " << plural(episodes, "episode") << " ("
            << (sample ? "sampled" : "greedy") << ") on " << device.str() << " after " << checkpoint.global_step
            << " training steps: return " << format_significant(mean) << " ± "
            << format_significant(std::sqrt(variance)) << " (min " << format_significant(*low) << ", max "
            << format_significant(*high) << "); physics: " << describe_physics(spec, physics) << "\n";
  return 0;
}

}  // namespace surge::cli
