#include "tools/bench/render_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"
#include "sim/format.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "sim/timer.hpp"

namespace surge::cli {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// The lines every frame bench starts with: what ran, where, how many, and the frames' kind.
void print_header(const RenderBenchConfig& config, const std::string& frames) {
  std::printf("scenario                 %s\n", config.spec->name.c_str());
  std::printf("device                   %s\n", config.device.str().c_str());
  std::printf("num_envs x steps         %lld x %lld (%s %dx%d %s)\n", static_cast<long long>(config.num_envs),
              static_cast<long long>(config.steps), frames.c_str(), config.frame.width, config.frame.height,
              config.frame.channels == 1 ? "grey" : "RGB");
}

}  // namespace

int run_render_bench(const RenderBenchConfig& config) {
  const ScenarioSpec& spec = *config.spec;
  const Device device = config.device;
  const std::int64_t n = config.num_envs;
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  auto engine = make_engine(spec.name, device, n, config.seed);
  Stream stream(device);
  DeviceBuffer<std::uint8_t> frames(device, n * config.frame.bytes());
  DeviceBuffer<std::int32_t> actions(device, discrete ? n : 0);
  DeviceBuffer<float> continuous(device, discrete ? 0 : n * spec.action_dim);
  DeviceBuffer<float> obs(device, n * spec.obs_dim), reward(device, n);
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n);
  const StreamDrain drain(stream);
  StreamTimer timer(stream);
  std::vector<double> frame_rates, step_rates;
  for (int r = 0; r < config.repeats + 1; ++r) {  // the first round warms up and is not counted
    double render_seconds = 0.0;
    timer.start();
    for (std::int64_t t = 0; t < config.steps; ++t) {
      engine->random_actions(actions.span(), continuous.span(), stream);
      engine->step(ActionView{actions.cspan(), continuous.cspan()},
                   StepViews{obs.span(), reward.span(), terminated.span(), truncated.span(), {}}, stream);
    }
    timer.stop();
    const double step_seconds = timer.seconds();
    for (std::int64_t t = 0; t < config.steps; ++t) {
      timer.start();
      render_engine(*engine, config.frame, frames.span(), stream);
      timer.stop();
      render_seconds += timer.seconds();
    }
    if (r == 0) continue;
    const double env_steps = static_cast<double>(n * config.steps);
    frame_rates.push_back(env_steps / render_seconds);
    step_rates.push_back(env_steps / (render_seconds + step_seconds));
  }
  const std::int64_t frame_bytes = config.frame.bytes();
  print_header(config, "render");
  std::printf("frames/s (median)        %s\n", format_rate(median(frame_rates)).c_str());
  std::printf("env-steps/s with frames  %s   (step, then every frame drawn)\n",
              format_rate(median(step_rates)).c_str());
  std::printf("bytes written per step   %lld (the frame) + %zu (reward, flags, vector obs)\n",
              static_cast<long long>(frame_bytes), rollout_bytes_per_env_step(spec));
  std::printf("frame write bandwidth    %.3g GB/s\n", median(frame_rates) * static_cast<double>(frame_bytes) * 1e-9);
  return 0;
}

int run_pixel_bench(const RenderBenchConfig& config, int frame_stack, bool dry_run) {
  const ScenarioSpec& spec = *config.spec;
  const Device device = config.device;
  const std::int64_t n = config.num_envs, steps = config.steps;
  check_pixel_shape(steps, config.frame, frame_stack);
  reference_frame_size(spec.name);  // a scenario without a renderer stops here
  const PixelMemoryPlan pixel_plan = PixelFrameStore::plan(spec, steps, n, config.frame, frame_stack);
  const std::int64_t stack_bytes = config.frame.bytes() * frame_stack;
  MemoryPlan plan(device);
  PixelFrameStore::table(spec, steps, n, config.frame, frame_stack).add_to(plan);
  plan.add<std::uint8_t>("bench.stacks", "[N][H][W][stack*C]", n * stack_bytes);
  if (dry_run) {
    std::printf("%s", plan.table(available_memory(device)).c_str());
    return 0;
  }
  plan.require_fits(
      "surge bench env --observation pixels with " + std::to_string(n) + " envs x " + std::to_string(steps) + " steps",
      "lower --num-envs, --steps or --frame-size");
  const bool discrete = spec.action_kind == ActionKind::Discrete;
  auto engine = make_engine(spec.name, device, n, config.seed);
  Stream stream(device);
  PixelFrameStore store(*engine, steps, config.frame, frame_stack);
  DeviceBuffer<std::uint8_t> stacks(device, n * stack_bytes);
  DeviceBuffer<std::int32_t> actions(device, discrete ? n : 0);
  DeviceBuffer<float> continuous(device, discrete ? 0 : n * spec.action_dim);
  DeviceBuffer<float> obs(device, n * spec.obs_dim), reward(device, n), final_obs(device, n * spec.obs_dim);
  DeviceBuffer<std::uint8_t> terminated(device, n), truncated(device, n);
  const StepViews views{obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()};
  const StreamDrain drain(stream);
  StreamTimer timer(stream);
  store.begin(stream);
  std::vector<double> step_rates, gather_rates;
  for (int r = 0; r < config.repeats + 1; ++r) {  // the first round warms up and is not counted
    double step_seconds = 0.0, gather_seconds = 0.0;
    for (std::int64_t t = 0; t < steps; ++t) {
      timer.start();
      engine->random_actions(actions.span(), continuous.span(), stream);
      store.step(t, ActionView{actions.cspan(), continuous.cspan()}, views, stream);
      timer.stop();
      step_seconds += timer.seconds();
      timer.start();
      store.gather_row(t + 1, stacks.span(), stream);
      timer.stop();
      gather_seconds += timer.seconds();
    }
    store.next_iteration(stream);
    if (r == 0) continue;
    const double env_steps = static_cast<double>(n * steps);
    step_rates.push_back(env_steps / step_seconds);
    gather_rates.push_back(env_steps / (step_seconds + gather_seconds));
  }
  const std::int64_t frame_bytes = config.frame.bytes();
  print_header(config, "stack " + std::to_string(frame_stack) + " of");
  std::printf("env-steps/s (median)     %s   (step, frame drawn and stored, final frames)\n",
              format_rate(median(step_rates)).c_str());
  std::printf("  with stacks gathered   %s   (and every row's stack gathered, as the policy reads it)\n",
              format_rate(median(gather_rates)).c_str());
  std::printf("bytes written per step   %lld (the frame) + 1 (its first flag) + %zu (reward, flags, vector obs)\n",
              static_cast<long long>(frame_bytes), rollout_bytes_per_env_step(spec));
  std::printf("  and by the gather      %lld (the stack)\n", static_cast<long long>(stack_bytes));
  std::printf("frame store              %s (each frame once) against %s storing every stack: %sx less\n",
              format_bytes(static_cast<std::size_t>(pixel_plan.store_bytes)).c_str(),
              format_bytes(static_cast<std::size_t>(pixel_plan.stacked_bytes)).c_str(),
              format_significant(pixel_plan.saving()).c_str());
  return 0;
}

}  // namespace surge::cli
