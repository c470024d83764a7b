// Steps CartPole's pixel observations through the frame store (scenarios/pixel_obs.hpp) and writes what
// came out as JSON, for check_pixel_stacks.py to replay through Gymnasium's own FrameStackObservation:
// each environment's frames in order (the final frame where an episode ended, then the reset frame),
// the done flags, and the stacks the store gathered (every row's, and the final stacks).
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"

namespace {

constexpr std::int64_t kEnvs = 6, kSteps = 12, kIterations = 6;
constexpr int kStack = 4;
const surge::FrameSize kSize{6, 5, 1};

// `"name": [v, v, ...]` as one JSON member.
std::string json_member(const char* name, const std::vector<std::uint8_t>& values) {
  std::string text = std::string("\"") + name + "\": [";
  for (std::size_t k = 0; k < values.size(); ++k) text += (k ? ", " : "") + std::to_string(values[k]);
  return text + "]";
}

void append(std::vector<std::uint8_t>& to, const std::uint8_t* from, std::int64_t bytes) {
  to.insert(to.end(), from, from + bytes);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 2) throw std::runtime_error("usage: pixel_stacks_sample OUT.json");
    using namespace surge;
    const Device cpu = Device::cpu();
    auto engine = make_engine("cartpole", cpu, kEnvs, 5);
    Stream stream(cpu);
    PixelFrameStore store(*engine, kSteps, kSize, kStack);
    store.begin(stream);
    const std::int64_t frame_bytes = kSize.bytes(), stack_bytes = frame_bytes * kStack;
    DeviceBuffer<std::int32_t> actions(cpu, kEnvs);
    DeviceBuffer<float> obs(cpu, kEnvs * 4), reward(cpu, kEnvs), final_obs(cpu, kEnvs * 4);
    DeviceBuffer<std::uint8_t> terminated(cpu, kEnvs), truncated(cpu, kEnvs), stacks(cpu, kEnvs * stack_bytes);
    // [steps + 1][N] row frames and stacks, [steps][N] final frames, final stacks and flags.
    std::vector<std::uint8_t> frames, stacks_out, final_frames, final_stacks, done;
    append(frames, store.frames(0), kEnvs * frame_bytes);
    store.gather_row(0, stacks.span(), stream);
    append(stacks_out, stacks.data(), kEnvs * stack_bytes);
    for (std::int64_t iteration = 0; iteration < kIterations; ++iteration) {
      for (std::int64_t t = 0; t < kSteps; ++t) {
        engine->random_actions(actions.span(), {}, stream);
        store.step(t, {actions.cspan(), {}},
                   {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}, stream);
        append(frames, store.frames(t + 1), kEnvs * frame_bytes);
        append(final_frames, store.final_frames(), kEnvs * frame_bytes);
        for (std::int64_t e = 0; e < kEnvs; ++e) done.push_back(terminated.data()[e] | truncated.data()[e]);
        store.gather_row(t + 1, stacks.span(), stream);
        append(stacks_out, stacks.data(), kEnvs * stack_bytes);
        store.gather_final(t, stacks.span(), stream);
        append(final_stacks, stacks.data(), kEnvs * stack_bytes);
      }
      store.next_iteration(stream);
    }
    std::ofstream out(argv[1]);
    out << "{\"envs\": " << kEnvs << ", \"steps\": " << kSteps * kIterations << ", \"stack\": " << kStack
        << ", \"height\": " << kSize.height << ", \"width\": " << kSize.width << ",\n"
        << json_member("frames", frames) << ",\n"
        << json_member("final_frames", final_frames) << ",\n"
        << json_member("done", done) << ",\n"
        << json_member("stacks", stacks_out) << ",\n"
        << json_member("final_stacks", final_stacks) << "}\n";
    out.close();
    return out ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pixel_stacks_sample: %s\n", e.what());
    return 1;
  }
}
