// The pixel-observation frame store (layout and semantics in pixel_obs.hpp). Compiled by nvcc when
// CUDA is on, else as plain C++: both backends run the same items.
#include "scenarios/pixel_obs.hpp"

#include <string>

#include "scenarios/acrobot_render.hpp"
#include "scenarios/cartpole_render.hpp"
#include "scenarios/mountain_car_render.hpp"
#include "scenarios/pendulum_render.hpp"
#include "sim/env_logic.cuh"
#include "sim/error.hpp"
#include "sim/parallel.cuh"

namespace surge {
namespace {

// ============================== device code ==============================

// first[row + 1][env] = 1 where step `row`'s episode ended: that row's frame starts a new episode.
struct MarkFirsts {
  const std::uint8_t* terminated;  // [N]
  const std::uint8_t* truncated;   // [N]
  std::uint8_t* first;             // [N], the new row's flags

  SURGE_HD void operator()(std::int64_t env) const { first[env] = (terminated[env] | truncated[env]) != 0 ? 1 : 0; }
};

// Frame row `index % height` of environment `index / height`, where its episode ended at this step:
// the state before the step (and the parameters it ran under, which the auto-reset may have redrawn)
// stepped again under the same action, and drawn. The engine's step is unchanged by this.
template <class S>
struct DrawFinalRows {
  const typename S::State* previous_states;   // [N]
  const typename S::Params* previous_params;  // [N]
  const std::int32_t* discrete;               // [N] or null
  const float* continuous;                    // [N][action_dim] or null
  const std::uint8_t* terminated;             // [N]
  const std::uint8_t* truncated;              // [N]
  int width, height, channels;
  std::uint8_t* final_frames;  // [N][height][width][channels]

  SURGE_HD void operator()(std::int64_t index) const {
    const std::int64_t env = index / height;
    if (!terminated[env] && !truncated[env]) return;
    const int row = static_cast<int>(index - env * height);
    typename S::State state = previous_states[env];
    S::step(state, previous_params[env], EnvLogic<S>::load_action(discrete, continuous, env));
    const std::int64_t row_bytes = static_cast<std::int64_t>(width) * channels;
    const render::FrameView frame{final_frames + env * height * row_bytes, width, height, channels, row_bytes};
    render::Scene scene;
    render::build_scene<S>(state, previous_params[env], scene);
    render::draw_row(scene, frame, row);
  }
};

// One image row of one stack: item `index` is image row `index % height` of output stack
// `index / height`, whose top frame is row top_rows(stack) of environment envs(stack).
struct GatherStacks {
  const std::uint8_t* frames;        // [T + S][N][H][W][C]
  const std::uint8_t* first;         // [T + S][N]
  const std::uint8_t* final_frames;  // [N][H][W][C], read where `final_top`
  const std::int64_t* indices;       // [rows] flat t * N + env, or null: row `top_row`, env = the stack's number
  std::int64_t top_row;              // with indices null
  bool final_top;                    // the top frame is the final frame after row top_row
  std::int64_t num_envs;
  int width, height, channels, stack;
  std::uint8_t* out;  // [rows][H][W][S * C]

  SURGE_HD void operator()(std::int64_t index) const {
    const std::int64_t item = index / height;
    const int image_row = static_cast<int>(index - item * height);
    const std::int64_t env = indices ? indices[item] % num_envs : item;
    const std::int64_t newest = indices ? indices[item] / num_envs : top_row;  // the newest stored row used
    const std::int64_t frame_bytes = static_cast<std::int64_t>(width) * height * channels;
    const std::int64_t row_bytes = static_cast<std::int64_t>(width) * channels;
    // Stored rows newest - (count - 1) .. newest fill the stack below the final frame, if any.
    const int count = final_top ? stack - 1 : stack;
    std::int64_t episode_start = newest - (count - 1);  // the oldest stored row in the stack's episode
    for (int k = 0; k < count; ++k) {
      const std::int64_t row = newest - k;
      if (first[(row + stack - 1) * num_envs + env]) {
        episode_start = row;
        break;
      }
    }
    std::uint8_t* destination = out + (item * height + image_row) * row_bytes * stack;
    for (int k = 0; k < stack; ++k) {
      const std::uint8_t* source;
      if (final_top && k == stack - 1) {
        source = final_frames + env * frame_bytes;
      } else {
        std::int64_t row = newest - (count - 1) + k;
        if (row < episode_start) row = episode_start;
        source = frames + ((row + stack - 1) * num_envs + env) * frame_bytes;
      }
      source += image_row * row_bytes;
      for (int pixel = 0; pixel < width; ++pixel)
        for (int c = 0; c < channels; ++c)
          destination[(pixel * stack + k) * channels + c] = source[pixel * channels + c];
    }
  }
};

// ============================== launchers ==============================

template <class S>
void draw_final_frames(const Stream& stream, const void* states, const void* params, const ActionView& actions,
                       const StepViews& out, std::int64_t n, FrameSize size, std::uint8_t* final_frames) {
  const DrawFinalRows<S> draw{static_cast<const typename S::State*>(states),
                              static_cast<const typename S::Params*>(params),
                              actions.discrete.data,
                              actions.continuous.data,
                              out.terminated.data,
                              out.truncated.data,
                              size.width,
                              size.height,
                              size.channels,
                              final_frames};
  parallel_for(stream, n * size.height, draw, 64 * static_cast<std::int64_t>(size.width));
}

using FinalDrawer = void (*)(const Stream&, const void*, const void*, const ActionView&, const StepViews&, std::int64_t,
                             FrameSize, std::uint8_t*);

FinalDrawer find_final_drawer(const std::string& scenario) {
  static const struct {
    const char* name;
    FinalDrawer draw;
  } drawers[] = {{CartPole::kName, &draw_final_frames<CartPole>},
                 {MountainCar::kName, &draw_final_frames<MountainCar>},
                 {Acrobot::kName, &draw_final_frames<Acrobot>},
                 {Pendulum::kName, &draw_final_frames<Pendulum>},
                 {MountainCarContinuous::kName, &draw_final_frames<MountainCarContinuous>}};
  for (const auto& d : drawers)
    if (scenario == d.name) return d.draw;
  throw InputError("scenario '" + scenario + "' has no renderer for pixel observations; use observation = \"vector\"");
}

std::size_t param_bytes(const ScenarioSpec& spec) {
  return static_cast<std::size_t>(spec.param_count()) * dtype_size(spec.param_dtype);
}

}  // namespace

void check_pixel_shape(std::int64_t num_steps, FrameSize frame, int stack) {
  if (frame.width < 1 || frame.height < 1 || frame.width > 1024 || frame.height > 1024)
    throw InputError("frame size " + std::to_string(frame.width) + "x" + std::to_string(frame.height) +
                     " is out of range; use 1 to 1024 pixels a side (84 is usual)");
  if (frame.channels != 1 && frame.channels != 3)
    throw InputError("frames have " + std::to_string(frame.channels) + " channels; use 3 (RGB) or 1 (grayscale)");
  if (stack < 1 || stack > num_steps)
    throw InputError("frame_stack " + std::to_string(stack) + " is out of range; use 1 to num_steps (" +
                     std::to_string(num_steps) + "), 4 is usual");
}

BufferTable PixelFrameStore::table(const ScenarioSpec& spec, std::int64_t t, std::int64_t n, FrameSize frame, int stack,
                                   Buffers& b) {
  const std::int64_t h = frame.height, w = frame.width, c = frame.channels, s = stack;
  BufferTable table;
  b.frames = table.add<std::uint8_t>("pixels.frames", {t + s, n, h, w, c}, "[T+stack][N][H][W][C]",
                                     "every frame once: observation row t is slot t + stack - 1");
  b.first = table.add<std::uint8_t>("pixels.first", {t + s, n}, "[T+stack][N]",
                                    "1 where a frame is the first of its episode");
  b.final_frames = table.add<std::uint8_t>("pixels.final_frames", {n, h, w, c}, "[N][H][W][C]",
                                           "the last frame of each episode that ended at the latest step");
  b.previous_states = table.add<float>("pixels.previous_states", {n, spec.state_dim}, "[N][state_dim]",
                                       "the states before the latest step, to draw final frames from");
  b.previous_params =
      table.add<std::uint8_t>("pixels.previous_params", {n, static_cast<std::int64_t>(param_bytes(spec))},
                              "[N][param bytes]", "the parameters the latest step ran under");
  return table;
}

BufferTable PixelFrameStore::table(const ScenarioSpec& spec, std::int64_t num_steps, std::int64_t num_envs,
                                   FrameSize frame, int stack) {
  Buffers unused;
  return table(spec, num_steps, num_envs, frame, stack, unused);
}

PixelMemoryPlan PixelFrameStore::plan(const ScenarioSpec& spec, std::int64_t num_steps, std::int64_t num_envs,
                                      FrameSize frame, int stack) {
  PixelMemoryPlan plan;
  plan.frame_bytes = frame.bytes();
  plan.store_bytes = static_cast<std::int64_t>(table(spec, num_steps, num_envs, frame, stack).bytes());
  plan.stacked_bytes = (num_steps + 2) * num_envs * stack * plan.frame_bytes;
  return plan;
}

PixelFrameStore::PixelFrameStore(Engine& engine, std::int64_t num_steps, FrameSize frame, int stack)
    : engine_(engine), num_steps_(num_steps), num_envs_(engine.num_envs()), frame_(frame), stack_(stack) {
  check_pixel_shape(num_steps, frame, stack);
  find_final_drawer(engine.spec().name);
  Stream stream(engine.device());
  arena_ = BufferArena(engine.device(), table(engine.spec(), num_steps, num_envs_, frame, stack, b_), stream);
  stream.synchronize();
}

std::uint8_t* PixelFrameStore::frames(std::int64_t row) const {
  SURGE_CHECK(row > -stack_ && row <= num_steps_, "frame row out of range");
  return arena_.data(b_.frames) + slot(row) * num_envs_ * frame_.bytes();
}

std::uint8_t* PixelFrameStore::first_flags(std::int64_t row) const {
  SURGE_CHECK(row > -stack_ && row <= num_steps_, "frame row out of range");
  return arena_.data(b_.first) + slot(row) * num_envs_;
}

void PixelFrameStore::begin(const Stream& stream) {
  const Device device = engine_.device();
  render_engine(engine_, frame_, {frames(0), num_envs_ * frame_.bytes(), device}, stream);
  std::uint8_t* first = arena_.data(b_.first);
  zero_bytes(first, device, static_cast<std::size_t>(slot(0) * num_envs_), stream);
  const std::vector<std::uint8_t> ones(static_cast<std::size_t>(num_envs_), 1);
  copy_bytes(first + slot(0) * num_envs_, device, ones.data(), Device::cpu(), ones.size(), stream);
  stream.synchronize();  // `ones` is read by the copy
}

void PixelFrameStore::step(std::int64_t t, const ActionView& actions, const StepViews& out, const Stream& stream) {
  SURGE_CHECK(t >= 0 && t < num_steps_, "step out of range");
  SURGE_CHECK(!out.terminated.empty() && !out.truncated.empty(), "pixel steps need the done flags");
  const Device device = engine_.device();
  const ScenarioSpec& spec = engine_.spec();
  float* previous_states = arena_.data(b_.previous_states);
  std::uint8_t* previous_params = arena_.data(b_.previous_params);
  copy_bytes(previous_states, device, engine_.states().data, device, engine_.states().bytes(), stream);
  copy_bytes(previous_params, device, engine_.params().data, device, num_envs_ * param_bytes(spec), stream);
  engine_.step(actions, out, stream);
  render_engine(engine_, frame_, {frames(t + 1), num_envs_ * frame_.bytes(), device}, stream);
  parallel_for(stream, num_envs_,
               MarkFirsts{out.terminated.data, out.truncated.data, arena_.data(b_.first) + slot(t + 1) * num_envs_});
  find_final_drawer(spec.name)(stream, previous_states, previous_params, actions, out, num_envs_, frame_,
                               final_frames());
}

void PixelFrameStore::next_iteration(const Stream& stream) {
  const Device device = engine_.device();
  const std::int64_t rows = stack_, from = slot(num_steps_ - stack_ + 1), to = slot(-(stack_ - 1));
  std::uint8_t* frames_base = arena_.data(b_.frames);
  std::uint8_t* first = arena_.data(b_.first);
  const std::int64_t frame_bytes = frame_.bytes();
  copy_bytes(frames_base + to * num_envs_ * frame_bytes, device, frames_base + from * num_envs_ * frame_bytes, device,
             static_cast<std::size_t>(rows * num_envs_ * frame_bytes), stream);
  copy_bytes(first + to * num_envs_, device, first + from * num_envs_, device,
             static_cast<std::size_t>(rows * num_envs_), stream);
}

void PixelFrameStore::gather_row(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const {
  SURGE_CHECK(t >= 0 && t <= num_steps_ && out.size == num_envs_ * stack_bytes(), "gather_row does not fit");
  const GatherStacks gather{
      arena_.data(b_.frames), arena_.data(b_.first), final_frames(),  nullptr, t,       false, num_envs_,
      frame_.width,           frame_.height,         frame_.channels, stack_,  out.data};
  parallel_for(stream, num_envs_ * frame_.height, gather, stack_bytes() / frame_.height);
}

void PixelFrameStore::gather(Span<const std::int64_t> indices, Span<std::uint8_t> out, const Stream& stream) const {
  SURGE_CHECK(out.size == indices.size * stack_bytes(), "gather does not fit");
  const GatherStacks gather{
      arena_.data(b_.frames), arena_.data(b_.first), final_frames(),  indices.data, 0,       false, num_envs_,
      frame_.width,           frame_.height,         frame_.channels, stack_,       out.data};
  parallel_for(stream, indices.size * frame_.height, gather, stack_bytes() / frame_.height);
}

void PixelFrameStore::gather_final(std::int64_t t, Span<std::uint8_t> out, const Stream& stream) const {
  SURGE_CHECK(t >= 0 && t < num_steps_ && out.size == num_envs_ * stack_bytes(), "gather_final does not fit");
  const GatherStacks gather{
      arena_.data(b_.frames), arena_.data(b_.first), final_frames(),  nullptr, t,       true, num_envs_,
      frame_.width,           frame_.height,         frame_.channels, stack_,  out.data};
  parallel_for(stream, num_envs_ * frame_.height, gather, stack_bytes() / frame_.height);
}

}  // namespace surge
