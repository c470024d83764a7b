// The pixel frame store on CUDA against its CPU twin: the same seeds and random actions give the same
// done flags, and frames, stacks and final stacks that differ at most by rounding (a level or two of
// 255 on a few edge pixels, where the device's sinf/cosf round differently).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <vector>

#include "scenarios/pixel_obs.hpp"
#include "scenarios/registry.hpp"

using namespace surge;

namespace {

// Bytes that differ by more than one level fail; bytes that differ at all stay rare.
void check_close(const std::vector<std::uint8_t>& cuda, const std::vector<std::uint8_t>& cpu) {
  REQUIRE(cuda.size() == cpu.size());
  std::size_t differing = 0, far = 0;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const int gap = std::abs(static_cast<int>(cuda[i]) - static_cast<int>(cpu[i]));
    differing += gap > 0 ? 1 : 0;
    far += gap > 2 ? 1 : 0;
  }
  CHECK(far == 0);
  CHECK(differing * 1000 <= cpu.size());
}

struct Twin {
  std::unique_ptr<Engine> engine;
  Stream stream;
  PixelFrameStore store;
  DeviceBuffer<std::int32_t> actions;
  DeviceBuffer<float> obs, reward, final_obs;
  DeviceBuffer<std::uint8_t> terminated, truncated, stacks;

  Twin(Device device, std::int64_t n, std::int64_t t, FrameSize size, int stack)
      : engine(make_engine("cartpole", device, n, 21)),
        stream(device),
        store(*engine, t, size, stack),
        actions(device, n),
        obs(device, n * 4),
        reward(device, n),
        final_obs(device, n * 4),
        terminated(device, n),
        truncated(device, n),
        stacks(device, n * size.bytes() * stack) {}

  StepViews views() const { return {obs.span(), reward.span(), terminated.span(), truncated.span(), final_obs.span()}; }
};

}  // namespace

TEST_CASE("CUDA pixel frames, stacks and final stacks match the CPU's", "[gpu][pixels]") {
  const std::int64_t n = 512, t = 32;
  const FrameSize size{84, 84, 1};
  Twin cpu(Device::cpu(), n, t, size, 4), cuda(Device::cuda(0), n, t, size, 4);
  cpu.store.begin(cpu.stream);
  cuda.store.begin(cuda.stream);
  std::int64_t ended = 0;
  for (int iteration = 0; iteration < 2; ++iteration) {
    for (std::int64_t step = 0; step < t; ++step) {
      for (Twin* twin : {&cpu, &cuda}) {
        twin->engine->random_actions(twin->actions.span(), {}, twin->stream);
        twin->store.step(step, {twin->actions.cspan(), {}}, twin->views(), twin->stream);
      }
      const std::vector<std::uint8_t> done = to_host(cpu.terminated.cspan(), cpu.stream);
      const std::vector<std::uint8_t> cut = to_host(cpu.truncated.cspan(), cpu.stream);
      REQUIRE(to_host(cuda.terminated.cspan(), cuda.stream) == done);
      REQUIRE(to_host(cuda.truncated.cspan(), cuda.stream) == cut);
      for (std::uint8_t d : done) ended += d;
      const std::int64_t frame_bytes = n * size.bytes();
      check_close(
          to_host(Span<const std::uint8_t>{cuda.store.frames(step + 1), frame_bytes, cuda.engine->device()},
                  cuda.stream),
          to_host(Span<const std::uint8_t>{cpu.store.frames(step + 1), frame_bytes, Device::cpu()}, cpu.stream));
      for (Twin* twin : {&cpu, &cuda}) twin->store.gather_row(step + 1, twin->stacks.span(), twin->stream);
      check_close(to_host(cuda.stacks.cspan(), cuda.stream), to_host(cpu.stacks.cspan(), cpu.stream));
      for (Twin* twin : {&cpu, &cuda}) twin->store.gather_final(step, twin->stacks.span(), twin->stream);
      std::vector<std::uint8_t> cuda_final = to_host(cuda.stacks.cspan(), cuda.stream);
      const std::vector<std::uint8_t> cpu_final = to_host(cpu.stacks.cspan(), cpu.stream);
      const std::int64_t stack_bytes = size.bytes() * 4;
      for (std::int64_t e = 0; e < n; ++e)
        if (!done[e] && !cut[e])  // final stacks only where an episode ended
          for (std::int64_t k = 0; k < stack_bytes; ++k)
            cuda_final[e * stack_bytes + k] = cpu_final[e * stack_bytes + k];
      check_close(cuda_final, cpu_final);
    }
    cpu.store.next_iteration(cpu.stream);
    cuda.store.next_iteration(cuda.stream);
  }
  CHECK(ended > n / 2);
}
