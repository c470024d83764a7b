// surge render: a scenario's state as a picture (PNG), or environments playing as a video (GIF, MP4).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include "scenarios/registry.hpp"
#include "scenarios/scene_render.hpp"
#include "sim/error.hpp"
#include "sim/format.hpp"
#include "sim/memory.hpp"
#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/io.hpp"
#include "tools/cli/video_recording.hpp"
#include "tools/video/png.hpp"

namespace surge::cli {

namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

// "--state 0.1,0,0.05,0" -> one value per state field of `spec`, in its order.
std::vector<float> parse_state(const std::string& text, const ScenarioSpec& spec) {
  std::string names;
  for (const std::string& name : spec.state_names) names += (names.empty() ? "" : ",") + name;
  std::vector<float> values;
  // Every comma separates two cells: "1,2,3,4," has an empty fifth one.
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string cell = text.substr(start, end - start);
    start = end + 1;
    const auto value = parse_number_text(cell);
    if (!value || !std::isfinite(*value))
      throw InputError("--state value '" + cell + "' is not a number; give " + spec.name + "'s " + names);
    values.push_back(static_cast<float>(*value));
  }
  if (values.size() != spec.state_names.size())
    throw InputError("--state '" + text + "' has " + plural(static_cast<std::int64_t>(values.size()), "value") + "; " +
                     spec.name + " needs " + std::to_string(spec.state_names.size()) + ": " + names);
  return values;
}

// `steps` steps of every environment with uniform random actions, each calling `after_step`.
template <class AfterStep>
void play_randomly(Engine& engine, std::int64_t steps, AfterStep after_step) {
  const Device device = engine.device();
  const ScenarioSpec& spec = engine.spec();
  const std::int64_t n = engine.num_envs();
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  Stream stream(device);
  DeviceBuffer<std::int32_t> actions(device, discrete ? n : 0);
  DeviceBuffer<float> continuous(device, discrete ? 0 : n * spec.action_dim);
  DeviceBuffer<float> obs(device, n * spec.obs_dim), reward(device, n);
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n);
  for (std::int64_t t = 0; t < steps; ++t) {
    engine.random_actions(actions.span(), continuous.span(), stream);
    engine.step(ActionView{actions.cspan(), continuous.cspan()},
                StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), {}}, stream);
    after_step();
  }
  stream.synchronize();
}

}  // namespace

int run_render(const Args& args) {
  Command cmd("render",
              "Draws a scenario as Gymnasium's render_mode=\"rgb_array\" draws it, at any size, each pixel\n"
              "from the exact area the scene's shapes cover in it. FILE.png: one state (--state, or the\n"
              "first environment's after --steps random steps from a reset). FILE.gif or FILE.mp4: --envs\n"
              "environments (tiled) taking --steps random actions, each with its episode's return in a\n"
              "corner; with --checkpoint, the trained policy instead (as surge eval --video).");
  cmd.option("scenario", "NAME", "the scenario (not needed with --checkpoint)")
      .option("out", "FILE", "FILE.png, FILE.gif or FILE.mp4 (MP4 through the ffmpeg program)", "", true)
      .option("state", "V,V,...", "the state to draw (PNG): one value per state field, in the scenario's order")
      .option("steps", "K", "random steps before the picture (PNG), or the video's length", "")
      .option("envs", "N", "environments in the video, tiled (1 to 16)", "1")
      .option("checkpoint", "FILE", "record this policy's episodes (one per environment, greedy)")
      .option("size", "WxH", "frame size (of each tile in a video); default: Gymnasium's, or about it in all")
      .flag("grayscale", "grey frames (PNG: one channel)")
      .option("seed", "S", "seed of the environments' resets and random actions", "12345")
      .option("device", "DEV", device_help(), "auto")
      .example("surge render --scenario cartpole --state 0.5,0,0.1,0 --size 84x84 --out cartpole.png")
      .example("surge render --scenario acrobot --steps 300 --envs 4 --out acrobot.gif")
      .example("surge render --checkpoint runs/cartpole/checkpoint.h5 --envs 4 --out cartpole.mp4");
  if (!cmd.parse_or_print_usage(args)) return 0;
  const std::string out = cmd.get("out");
  const bool png = ends_with(out, ".png");
  if (!png) video::check_video_path(out);
  const std::int64_t envs = cmd.get_int("envs", 1, kMaxVideoTiles);
  if (cmd.has("checkpoint")) {
    if (png) throw InputError(cmd.complaint("--checkpoint records a video; name --out FILE.gif or FILE.mp4"));
    // The checkpoint names its scenario and the policy plays each episode to its end.
    for (const char* option : {"scenario", "steps", "state", "grayscale"})
      if (cmd.has(option))
        throw InputError(cmd.complaint(std::string("--") + option +
                                       " does not apply with --checkpoint (the checkpoint names its scenario, and "
                                       "its episodes play to their end in colour); leave it out"));
    Args eval_args = {"--checkpoint", cmd.get("checkpoint"), "--video", out,
                      "--episodes",   std::to_string(envs),  "--seed",  cmd.get("seed"),
                      "--device",     cmd.get("device")};
    if (cmd.has("size")) eval_args.insert(eval_args.end(), {"--video-size", cmd.get("size")});
    return run_eval(eval_args);
  }
  if (!cmd.has("scenario")) throw InputError(cmd.complaint("--scenario is needed (or --checkpoint)"));
  const ScenarioSpec& spec = scenario_spec(cmd.get("scenario"));
  FrameSize size = cmd.has("size") ? parse_frame_size(cmd.get("size")) : reference_frame_size(spec.name);
  size.channels = cmd.flag_set("grayscale") ? 1 : 3;
  if (png && envs > 1)
    throw InputError(cmd.complaint("--envs " + std::to_string(envs) +
                                   " tiles a video; a PNG draws one environment: name --out FILE.gif or FILE.mp4"));
  const std::int64_t steps = cmd.has("steps") ? cmd.get_int("steps", 0, png ? 1 << 20 : 100000) : (png ? 0 : 200);
  std::vector<float> given_state;
  if (cmd.has("state")) {
    if (!png) throw InputError(cmd.complaint("--state draws one picture; name --out FILE.png"));
    given_state = parse_state(cmd.get("state"), spec);
  }
  require_writable(out, "output");
  const std::uint64_t seed = cmd.get_u64("seed");
  if (png) {
    if (given_state.empty()) {
      const Device device = resolve_device(cmd.get("device"));
      auto engine = make_engine(spec.name, device, 1, seed);
      play_randomly(*engine, steps, [] {});
      given_state = to_host(engine->states(), Stream(device));
    }
    std::vector<std::uint8_t> pixels(static_cast<std::size_t>(size.bytes()));
    render_states(spec.name, given_state.data(), nullptr, 1, size, pixels.data());
    const std::vector<std::uint8_t> file = video::encode_png(pixels.data(), size.width, size.height, size.channels);
    write_atomically(out, std::string(file.begin(), file.end()));
    std::cout << "surge render: " << spec.name << " " << size.width << "x" << size.height << " "
              << (size.channels == 1 ? "grey" : "RGB") << " -> " << out << "\n";
    return 0;
  }
  const Device device = resolve_device(cmd.get("device"));
  auto engine = make_engine(spec.name, device, envs, seed);
  VideoRecording recording(out, spec.name, static_cast<int>(envs),
                           cmd.has("size") ? size : FrameSize{0, 0, size.channels});
  Stream stream(device);
  const std::vector<std::uint8_t> live(static_cast<std::size_t>(envs), 0);
  auto capture = [&] {
    const std::vector<float> returns = to_host(engine->episode_returns(), stream);
    recording.capture(*engine, std::vector<double>(returns.begin(), returns.end()), live);
  };
  try {
    capture();
    play_randomly(*engine, steps, capture);
  } catch (const RecordingStopped& stopped) {
    return recording.finish_stopped(stopped, "surge render", out);
  }
  recording.close();
  std::cout << "surge render: " << spec.name << ", " << plural(envs, "environment") << " taking random actions, "
            << plural(recording.frames(), "frame") << " of " << recording.width() << "x" << recording.height() << " -> "
            << out << "\n";
  return 0;
}

}  // namespace surge::cli
