// The memory plan: its arithmetic against the real allocations of the engines and of `surge bench
// env` on the CPU backend, the 256-byte rounding, the fit check, and how a run that cannot fit stops.
#include <sys/wait.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "scenarios/registry.hpp"
#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "sim/memory_plan.hpp"
#include "tests/support/run_surge.hpp"
#include "tools/bench/bench_buffers.hpp"

namespace fs = std::filesystem;
using namespace surge;

namespace {

std::size_t rounded_sum(std::initializer_list<std::size_t> sizes) {
  std::size_t sum = 0;
  for (std::size_t s : sizes) sum += s == 0 ? 0 : (s + 255) / 256 * 256;
  return sum;
}

const PlannedBuffer* find(const MemoryPlan& plan, const std::string& name) {
  for (const PlannedBuffer& b : plan.buffers())
    if (b.name == name) return &b;
  return nullptr;
}

using surge::testing::Result;
using surge::testing::run_surge;

}  // namespace

TEST_CASE("allocations round up to 256 bytes, as device_alloc takes them", "[memory_plan]") {
  CHECK(allocation_bytes(0) == 0);
  CHECK(allocation_bytes(1) == 256);
  CHECK(allocation_bytes(256) == 256);
  CHECK(allocation_bytes(257) == 512);
  MemoryPlan plan(Device::cpu());
  plan.add<float>("a", "[64]", 64)       // 256 bytes exactly
      .add<float>("b", "[65]", 65)       // 260 -> 512
      .add<std::uint8_t>("c", "[1]", 1)  // 1 -> 256
      .add<double>("empty", "[0]", 0);   // allocates nothing: left out
  REQUIRE(plan.buffers().size() == 3);
  CHECK(find(plan, "empty") == nullptr);
  CHECK(plan.bytes() == 256 + 260 + 1);
  CHECK(plan.allocated_bytes() == 256 + 512 + 256);
  CHECK(find(plan, "b")->bytes() == 260);
  CHECK(find(plan, "b")->allocated_bytes() == 512);
}

TEST_CASE("CPU buffers of 4 MiB and more start on a huge page's boundary, the size as planned", "[memory_plan]") {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (const std::size_t bytes : {std::size_t{1}, 3 * kMiB, 4 * kMiB, 9 * kMiB + 1}) {
    INFO(bytes << " bytes");
    void* pointer = surge::device_alloc(Device::cpu(), bytes);
    REQUIRE(pointer != nullptr);
    const auto address = reinterpret_cast<std::uintptr_t>(pointer);
    CHECK(address % (bytes >= 4 * kMiB ? 2 * kMiB : 256) == 0);
    std::memset(pointer, 0x5a, allocation_bytes(bytes));  // every byte the plan counts is there to write
    surge::device_free(Device::cpu(), pointer);
  }
}

TEST_CASE("an engine's plan is what the engine allocates", "[memory_plan]") {
  for (const std::string& name : scenario_names()) {
    for (std::int64_t n : {1, 7, 1000, 65537}) {
      INFO(name << " with " << n << " envs");
      const MemoryPlan plan = engine_memory_plan(name, Device::cpu(), n);
      const auto engine = make_engine(name, Device::cpu(), n, 1);
      CHECK(plan.allocated_bytes() == engine->device_bytes());  // one allocation, each buffer 256-byte aligned
      CHECK(plan.allocated_bytes() >= plan.bytes());
      CHECK(plan.allocated_bytes() < plan.bytes() + 256 * plan.buffers().size());
      // Buffers the engine exposes, checked one by one.
      CHECK(find(plan, "engine.state")->bytes() == engine->states().bytes());
      const surge::TensorView params = engine->params();
      CHECK(find(plan, "engine.params")->bytes() == params.numel() * surge::dtype_size(params.dtype));
      CHECK(find(plan, "engine.episode_steps")->bytes() == engine->episode_steps().bytes());
      CHECK(find(plan, "engine.episode_returns")->bytes() == engine->episode_returns().bytes());
      CHECK(find(plan, "engine.rng_offsets")->bytes() == engine->rng_offsets().bytes());
    }
  }
}

TEST_CASE("the bench env plan is what bench env allocates", "[memory_plan]") {
  for (const std::string& name : scenario_names()) {
    const ScenarioSpec& spec = scenario_spec(name);
    for (bool step_mode : {false, true}) {
      const std::int64_t n = 1000, steps = 13;
      INFO(name << (step_mode ? " step mode" : " fused mode"));
      const auto engine = make_engine(name, Device::cpu(), n, 1);
      const cli::EnvBenchBuffers buffers(spec, Device::cpu(), n, steps, step_mode);
      const MemoryPlan own = cli::EnvBenchBuffers::plan(spec, Device::cpu(), n, steps, step_mode);
      CHECK(own.bytes() == buffers.bytes());
      CHECK(find(own, "rollout.obs")->bytes() == buffers.obs.bytes());
      CHECK(find(own, "rollout.reward")->bytes() == buffers.reward.bytes());
      CHECK(find(own, "rollout.terminated")->bytes() == buffers.terminated.bytes());
      CHECK(find(own, "rollout.truncated")->bytes() == buffers.truncated.bytes());
      const PlannedBuffer* discrete = find(own, "actions.discrete");
      const PlannedBuffer* continuous = find(own, "actions.continuous");
      CHECK((discrete ? discrete->bytes() : 0) == buffers.discrete_actions.bytes());
      CHECK((continuous ? continuous->bytes() : 0) == buffers.continuous_actions.bytes());
      CHECK(own.allocated_bytes() ==
            rounded_sum({buffers.obs.bytes(), buffers.reward.bytes(), buffers.terminated.bytes(),
                         buffers.truncated.bytes(), buffers.discrete_actions.bytes(),
                         buffers.continuous_actions.bytes()}));
      // The whole run: engine, rollout buffers and the two buffers of the copy-bandwidth measurement.
      const MemoryPlan whole = cli::bench_env_memory_plan(spec, Device::cpu(), n, steps, step_mode);
      const MemoryPlan plan_of_engine = engine_memory_plan(name, Device::cpu(), n);
      CHECK(plan_of_engine.allocated_bytes() == engine->device_bytes());
      const std::size_t copy = cli::bench_copy_bytes(spec, n, steps);
      CHECK(whole.bytes() == plan_of_engine.bytes() + buffers.bytes() + 2 * copy);
      CHECK(copy == std::size_t(64) << 20);  // small runs copy the 64 MiB floor
    }
  }
}

TEST_CASE("fits compares the total with the free memory", "[memory_plan]") {
  MemoryPlan plan(Device::cpu());
  plan.add<float>("x", "[1000]", 1000);  // 4000 -> 4096 bytes
  AvailableMemory available;
  available.known = true;
  available.free_bytes = 4096;
  CHECK(plan.fits(available));
  available.free_bytes = 4095;
  CHECK_FALSE(plan.fits(available));
  available.known = false;
  CHECK_FALSE(plan.fits(available));

  const AvailableMemory here = available_memory(Device::cpu());
  CHECK(here.known);
  CHECK(here.free_bytes > 0);
  CHECK(here.free_bytes <= here.total_bytes);
  CHECK(plan.fits());  // 4 KiB fits on any machine that runs this test

  const std::string table = plan.table(here);
  CHECK(table.find("x") != std::string::npos);
  CHECK(table.find("total") != std::string::npos);
  CHECK(table.find("(4096 bytes)") != std::string::npos);
  CHECK(table.find(": fits") != std::string::npos);
}

TEST_CASE("a plan that cannot fit stops with the plan in the message", "[memory_plan]") {
  MemoryPlan plan(Device::cpu());
  plan.add<float>("huge.observations", "[T][N][4]", std::int64_t(1) << 50).add<float>("small", "[8]", 8);
  try {
    plan.require_fits("this run", "lower --num-envs");
    FAIL("a petabyte plan was accepted");
  } catch (const InputError& e) {
    const std::string message = e.what();
    const std::string first_line = message.substr(0, message.find('\n'));
    CHECK(first_line.find("this run needs") != std::string::npos);
    CHECK(first_line.find("lower --num-envs") != std::string::npos);
    CHECK(message.find("huge.observations") != std::string::npos);
    CHECK(message.find("small") != std::string::npos);
    CHECK(message.find("does NOT fit") != std::string::npos);
  }
}

TEST_CASE("surge bench env --dry-run prints the plan; a run too big stops before allocating", "[memory_plan][cli]") {
  const Result dry = run_surge("bench env --device cpu --num-envs 1000 --steps 16 --dry-run");
  INFO("stdout:\n" << dry.out << "\nstderr:\n" << dry.err);
  CHECK(dry.exit_code == 0);
  const ScenarioSpec& spec = scenario_spec("cartpole");
  const std::size_t total = cli::bench_env_memory_plan(spec, Device::cpu(), 1000, 16, false).allocated_bytes();
  std::string total_text = "(";
  total_text += std::to_string(total);
  total_text += " bytes)";
  CHECK(dry.out.find(total_text) != std::string::npos);
  CHECK(dry.out.find("rollout.obs") != std::string::npos);
  CHECK(dry.out.find("engine.state") != std::string::npos);
  CHECK(dry.out.find("env-steps/s") == std::string::npos);  // nothing was run

  // 2^31 envs x 2^20 steps would take petabytes: exit 2 at once, with the plan.
  const Result big = run_surge("bench env --device cpu --num-envs 2147483648 --steps 1048576");
  INFO("stderr:\n" << big.err);
  CHECK(big.exit_code == 2);
  CHECK(big.err.rfind("surge bench env with 2147483648 envs x 1048576 steps needs", 0) == 0);
  CHECK(big.err.find("--num-envs") != std::string::npos);
  CHECK(big.err.find("rollout.obs") != std::string::npos);
  CHECK(big.out.empty());
}
