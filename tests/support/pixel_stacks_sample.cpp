// Steps CartPole's pixel observations through the frame store (scenarios/pixel_obs.hpp) and writes what
// came out as JSON, for check_pixel_stacks.py to replay through Gymnasium's own FrameStackObservation:
// each environment's frames in order (the final frame where an episode ended, then the reset frame),
// the done flags, and the stacks the store gathered (every row's, and the final stacks).
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"

namespace {

constexpr std::int64_t kEnvs = 6, kSteps = 12, kIterations = 6;
constexpr int kStack = 4;
const surge::FrameSize kSize{6, 5, 1};

void write_array(std::FILE* out, const char* name, const std::vector<std::uint8_t>& values, bool last = false) {
  std::fprintf(out, "\"%s\": [", name);
  for (std::size_t k = 0; k < values.size(); ++k) std::fprintf(out, "%s%d", k ? ", " : "", values[k]);
  std::fprintf(out, "]%s\n", last ? "" : ",");
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
    std::FILE* out = std::fopen(argv[1], "w");
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[1]);
    std::fprintf(out, "{\"envs\": %lld, \"steps\": %lld, \"stack\": %d, \"height\": %d, \"width\": %d,\n",
                 static_cast<long long>(kEnvs), static_cast<long long>(kSteps * kIterations), kStack, kSize.height,
                 kSize.width);
    write_array(out, "frames", frames);
    write_array(out, "final_frames", final_frames);
    write_array(out, "done", done);
    write_array(out, "stacks", stacks_out);
    write_array(out, "final_stacks", final_stacks, true);
    std::fprintf(out, "}\n");
    return std::fclose(out) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pixel_stacks_sample: %s\n", e.what());
    return 1;
  }
}
