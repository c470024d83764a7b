// GAE against a naive reference: for each step, the explicit sum over the rest of its episode within the
// rollout, sum_l (gamma lambda)^l delta_{t+l}, with the episode's end handled as Gymnasium's time limits
// demand (terminated: no future; truncated: bootstrap from V(final observation); both: terminated).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "rl/gae.hpp"
#include "sim/philox.hpp"

namespace {

struct Rollout {
  std::int64_t steps, envs;
  std::vector<float> reward, value, final_value;
  std::vector<std::uint8_t> terminated, truncated;
};

Rollout random_rollout(std::int64_t steps, std::int64_t envs, std::uint64_t seed) {
  Rollout r{steps, envs, {}, {}, {}, {}, {}};
  surge::Rng rng(seed, 0, 0);
  const std::int64_t slots = steps * envs;
  r.reward.resize(slots);
  r.final_value.resize(slots);
  r.terminated.resize(slots);
  r.truncated.resize(slots);
  r.value.resize(slots + envs);
  for (auto& x : r.reward) x = rng.uniform(-1.0f, 2.0f);
  for (auto& x : r.value) x = rng.uniform(-3.0f, 3.0f);
  for (auto& x : r.final_value) x = rng.uniform(-3.0f, 3.0f);
  for (std::int64_t k = 0; k < slots; ++k) {
    const float u = rng.uniform();
    // About 8% terminated only, 8% truncated only, 4% both.
    r.terminated[k] = (u < 0.08f || (u >= 0.16f && u < 0.20f)) ? 1 : 0;
    r.truncated[k] = (u >= 0.08f && u < 0.20f) ? 1 : 0;
  }
  return r;
}

void reference_gae(const Rollout& r, double gamma, double lambda, std::vector<double>& adv, std::vector<double>& ret) {
  const std::int64_t n = r.envs;
  adv.assign(r.steps * n, 0.0);
  ret.assign(r.steps * n, 0.0);
  auto delta = [&](std::int64_t t, std::int64_t i) {
    const std::int64_t slot = t * n + i;
    double next = r.value[slot + n];
    if (r.terminated[slot])
      next = 0.0;
    else if (r.truncated[slot])
      next = r.final_value[slot];
    return r.reward[slot] + gamma * next - r.value[slot];
  };
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t t = 0; t < r.steps; ++t) {
      double sum = 0.0, weight = 1.0;
      for (std::int64_t u = t; u < r.steps; ++u) {
        sum += weight * delta(u, i);
        const std::int64_t slot = u * n + i;
        if (r.terminated[slot] || r.truncated[slot]) break;  // the episode ends at u
        weight *= gamma * lambda;
      }
      adv[t * n + i] = sum;
      ret[t * n + i] = sum + r.value[t * n + i];
    }
}

}  // namespace

TEST_CASE("GAE matches the explicit per-episode sum over mixed terminated and truncated ends", "[gae]") {
  for (auto [gamma, lambda] : {std::pair{0.99, 0.95}, std::pair{0.9, 1.0}, std::pair{0.97, 0.0}}) {
    const Rollout r = random_rollout(41, 13, 5);
    std::int64_t terminated = 0, truncated = 0, both = 0;
    for (std::size_t k = 0; k < r.terminated.size(); ++k) {
      terminated += r.terminated[k];
      truncated += r.truncated[k];
      both += r.terminated[k] && r.truncated[k];
    }
    REQUIRE(terminated > 20);
    REQUIRE(truncated > 20);
    REQUIRE(both > 5);
    std::vector<float> adv(r.steps * r.envs), ret(r.steps * r.envs);
    surge::Stream stream(surge::Device::cpu());
    surge::rl::compute_gae(stream, r.steps, r.envs, static_cast<float>(gamma), static_cast<float>(lambda),
                           r.reward.data(), r.terminated.data(), r.truncated.data(), r.value.data(),
                           r.final_value.data(), adv.data(), ret.data());
    std::vector<double> expected_adv, expected_ret;
    reference_gae(r, gamma, lambda, expected_adv, expected_ret);
    for (std::size_t k = 0; k < adv.size(); ++k) {
      INFO("gamma " << gamma << " lambda " << lambda << " slot " << k);
      CHECK(std::abs(adv[k] - expected_adv[k]) <= 1e-4 + 1e-5 * std::abs(expected_adv[k]));
      CHECK(std::abs(ret[k] - expected_ret[k]) <= 1e-4 + 1e-5 * std::abs(expected_ret[k]));
    }
  }
}

TEST_CASE("GAE bootstraps a truncated step from the final value and a terminated one from nothing", "[gae]") {
  // One env, two steps: step 0 truncated (final value 10), step 1 continues into value[2] = 4.
  const float reward[] = {1.0f, 2.0f}, value[] = {0.5f, 0.25f, 4.0f}, final_value[] = {10.0f, -7.0f};
  const std::uint8_t terminated[] = {0, 0}, truncated[] = {1, 0};
  float adv[2], ret[2];
  surge::Stream stream(surge::Device::cpu());
  surge::rl::compute_gae(stream, 2, 1, 0.5f, 0.5f, reward, terminated, truncated, value, final_value, adv, ret);
  CHECK(adv[1] == Approx(2.0 + 0.5 * 4.0 - 0.25));
  CHECK(adv[0] == Approx(1.0 + 0.5 * 10.0 - 0.5));  // no carry across the episode boundary
  // Terminated and truncated together: terminated wins, so no bootstrap at all.
  const std::uint8_t both[] = {1, 0};
  surge::rl::compute_gae(stream, 2, 1, 0.5f, 0.5f, reward, both, truncated, value, final_value, adv, ret);
  CHECK(adv[0] == Approx(1.0 - 0.5));
  CHECK(ret[0] == Approx(1.0));
}
