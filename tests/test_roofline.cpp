// The roofline placement and the analytic work counts of an env step, against values worked out by
// hand for small shapes; the per-env byte count against what a real engine allocates.
#include <catch2/catch.hpp>

#include "scenarios/registry.hpp"
#include "tools/bench/env_cost.hpp"
#include "tools/bench/roofline.hpp"

using namespace surge;
using namespace surge::throughput;

TEST_CASE("a phase above the ridge is compute-bound, one below it memory-bound") {
  const Ceilings ceilings{1e11, 2e10};  // ridge at 5 FLOP/byte
  CHECK(ceilings.ridge_intensity() == Approx(5.0));

  const auto compute = place_on_roofline({"gemm-like", 1e9, 1e8}, 0.1, ceilings);
  CHECK(compute.intensity == Approx(10.0));
  CHECK(compute.achieved_flops_per_s == Approx(1e10));
  CHECK(compute.achieved_bytes_per_s == Approx(1e9));
  CHECK(compute.fraction_of_compute == Approx(0.1));
  CHECK(compute.fraction_of_bandwidth == Approx(0.05));
  CHECK(compute.attainable_flops_per_s == Approx(1e11));
  CHECK(compute.fraction_of_roof == Approx(0.1));
  CHECK(compute.bound == Bound::Compute);

  const auto memory = place_on_roofline({"stream-like", 2e8, 1e9}, 0.25, ceilings);
  CHECK(memory.intensity == Approx(0.2));
  CHECK(memory.achieved_bytes_per_s == Approx(4e9));
  CHECK(memory.fraction_of_bandwidth == Approx(0.2));
  CHECK(memory.fraction_of_compute == Approx(0.008));
  CHECK(memory.attainable_flops_per_s == Approx(4e9));  // 2e10 B/s * 0.2 FLOP/B
  CHECK(memory.fraction_of_roof == Approx(0.2));
  CHECK(memory.bound == Bound::Memory);
  CHECK(std::string(bound_name(memory.bound)) == "memory");

  // At the ridge both roofs meet; it counts as compute-bound.
  CHECK(place_on_roofline({"ridge", 5e9, 1e9}, 1.0, ceilings).bound == Bound::Compute);
  CHECK_THROWS(place_on_roofline({"empty", 0, 1}, 1.0, ceilings));
  CHECK_THROWS(place_on_roofline({"instant", 1, 1}, 0.0, ceilings));
}

TEST_CASE("cartpole's env step: bytes and FLOPs by hand") {
  const ScenarioSpec& spec = scenario_spec("cartpole");
  // state 4 floats, params 6 floats, step counter 4, return 4, two RNG offsets 16, tally 24.
  CHECK(engine_bytes_per_env(spec) == 16 + 24 + 4 + 4 + 16 + 24);
  const PhaseWork fused = fused_env_step_work(spec, 128);
  // obs 16 + reward 4 + two flags 2 each step, plus the 88-byte record loaded and stored once per 128 steps.
  CHECK(fused.bytes == Approx(22.0 + 2.0 * 88.0 / 128.0));
  CHECK(fused.flops == Approx(30.0));  // discrete actions cost no FLOPs
  const PhaseWork step = stepwise_env_step_work(spec);
  // random actions: offset read + written 16, action written 4; step: action 4, state read + written 32,
  // params 24, counter 8, return 8, outputs 22.
  CHECK(step.bytes == Approx(20.0 + 4 + 32 + 24 + 8 + 8 + 22));
  CHECK(step.flops == Approx(30.0));
}

TEST_CASE("pendulum's env step: a continuous action adds its draw") {
  const ScenarioSpec& spec = scenario_spec("pendulum");
  CHECK(engine_bytes_per_env(spec) == 8 + 16 + 4 + 4 + 16 + 24);
  CHECK(random_action_flops(spec) == Approx(6.0));
  const PhaseWork fused = fused_env_step_work(spec, 100);
  CHECK(fused.bytes == Approx(18.0 + 2.0 * 72.0 / 100.0));  // obs 12 + reward 4 + flags 2
  CHECK(fused.flops == Approx(26.0 + 6.0));
  const PhaseWork step = stepwise_env_step_work(spec);
  CHECK(step.bytes == Approx(20.0 + 4 + 16 + 16 + 8 + 8 + 18));
}

TEST_CASE("every registered scenario has a FLOP count, and its per-env bytes match what its engine allocates") {
  for (const std::string& name : scenario_names()) {
    INFO(name);
    CHECK(scenario_step_flops(name) > 0);
    // The engine's device bytes grow by exactly the per-env record with each environment added (in
    // multiples of 256 environments, so that no buffer's 256-byte alignment rounds).
    const auto small = make_engine(name, Device::cpu(), 1024, 1);
    const auto large = make_engine(name, Device::cpu(), 3072, 1);
    CHECK((large->device_bytes() - small->device_bytes()) == 2048 * engine_bytes_per_env(scenario_spec(name)));
  }
  CHECK_THROWS(scenario_step_flops("no-such-scenario"));
}
