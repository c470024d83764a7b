// surge eval: plays K episodes with a trained policy from a checkpoint and reports their returns.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "rl/actor_critic.hpp"
#include "rl/evaluate.hpp"
#include "rl/io/checkpoint.hpp"
#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/physics_option.hpp"
#include "tools/cli/video_recording.hpp"

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
      .flag("sample", "draw actions from the policy instead of taking the most probable one")
      .option("video", "FILE", "record the episodes (the first 16, tiled) as FILE.gif or FILE.mp4 (MP4: ffmpeg)")
      .option("video-size", "WxH", "size of each tile of the video (default: about Gymnasium's frame in all)");
  add_physics_option(cmd)
      .note(
          "The environments run under the physics the policy was trained with (the checkpoint keeps it);\n"
          "--physics changes parameters by name on top of it, to test how robust the policy is.")
      .example("surge eval --checkpoint runs/cartpole/checkpoint.h5 --episodes 100")
      .example("surge eval --checkpoint runs/cartpole/checkpoint.h5 --episodes 1000 --sample --device cpu")
      .example("surge eval --checkpoint runs/dr/checkpoint.h5 --physics masspole=0.3")
      .example("surge eval --checkpoint runs/cartpole/checkpoint.h5 --episodes 4 --video cartpole.gif");
  if (!cmd.parse(args)) {
    std::cout << cmd.usage();
    return 0;
  }
  const std::int64_t episodes = cmd.get_int("episodes", 1, std::int64_t(1) << 26);
  const std::uint64_t seed = cmd.get_u64("seed");
  const bool sample = cmd.flag_set("sample");
  const std::string video_path = cmd.get("video");
  const FrameSize video_tile = cmd.has("video-size") ? parse_frame_size(cmd.get("video-size")) : FrameSize{};
  if (video_path.empty() && cmd.has("video-size"))
    throw InputError(cmd.complaint("--video-size sizes the frames of --video; add --video FILE.gif or FILE.mp4"));
  if (!video_path.empty()) {
    video::check_video_path(video_path);
    require_writable(video_path, "video");
  }
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
  // A pixel policy sees the scene drawn as it was in training.
  const rl::TrainConfig& trained = checkpoint.config;
  const auto frames = make_frame_store(*engine, trained.pixel_observations(), trained.frame_stack, trained.frame_size,
                                       trained.grayscale, trained.frame_stack);
  std::unique_ptr<VideoRecording> recording;
  rl::EvaluationWatcher watch;
  if (!video_path.empty()) {
    const int tiles = static_cast<int>(std::min<std::int64_t>(episodes, kMaxVideoTiles));
    recording = std::make_unique<VideoRecording>(video_path, checkpoint.scenario, tiles, video_tile);
    watch = [&, tiles](Span<const double> returns, Span<const std::uint8_t> finished) {
      const std::vector<double> shown = to_host(returns.slice(0, tiles), stream);
      const std::vector<std::uint8_t> ended = to_host(finished.slice(0, tiles), stream);
      recording->capture(*engine, shown, ended);
    };
  }
  std::vector<double> returns;
  try {
    returns = rl::evaluate_policy(*engine, network, params.cspan(), sample, normalization, watch, frames.get());
  } catch (const RecordingStopped& stopped) {
    return recording->finish_stopped(stopped, "surge eval", video_path);
  }
  if (recording) recording->close();

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
  if (recording)
    std::cout << "surge eval: video of " << plural(recording->frames(), "frame") << " (" << recording->width() << "x"
              << recording->height() << ") -> " << video_path << "\n";
  return 0;
}

}  // namespace surge::cli
