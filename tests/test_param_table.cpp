// The parameter table's carving, and the networks' initialisation: orthogonal matrices with the gains
// CleanRL uses, zero biases, and the same numbers for the same seed.
#include <catch2/catch.hpp>

#include <cmath>

#include "rl/actor_critic.hpp"
#include "rl/param_table.hpp"

using surge::rl::ActorCritic;
using surge::rl::ParamTable;

TEST_CASE("slices are 256-byte aligned, in order, and do not overlap", "[params]") {
  ParamTable table;
  table.add("a", 3, 5);
  table.add("b", 64, 1);
  table.add("c", 1, 1);
  table.add("d", 10, 13);
  REQUIRE(table.count() == 4);
  std::int64_t end = 0;
  for (const auto& slice : table.slices()) {
    CHECK(slice.offset % ParamTable::kAlignElements == 0);
    CHECK(slice.offset * sizeof(float) % 256 == 0);
    CHECK(slice.offset >= end);
    end = slice.offset + slice.size();
  }
  CHECK(table.total() >= end);
  CHECK(table.total() % ParamTable::kAlignElements == 0);
  CHECK(table.parameter_count() == 15 + 64 + 1 + 130);
  CHECK(table[table.find("d")].rows == 10);
  CHECK(table.find("missing") == -1);
  CHECK_THROWS(table.add("a", 1, 1));
}

TEST_CASE("actor and critic register every layer in one table", "[params]") {
  surge::rl::NetworkConfig config;
  config.hidden = {64, 32};
  const ActorCritic net(4, 3, config);
  const ParamTable& table = net.table();
  CHECK(table.count() == 12);
  CHECK(table[table.find("actor.0.weight")].rows == 64);
  CHECK(table[table.find("actor.0.weight")].cols == 4);
  CHECK(table[table.find("actor.2.weight")].rows == 3);
  CHECK(table[table.find("critic.2.weight")].rows == 1);
  CHECK(table[table.find("critic.2.bias")].size() == 1);
  CHECK(table.parameter_count() == (4 * 64 + 64 + 64 * 32 + 32 + 32 * 3 + 3) + (4 * 64 + 64 + 64 * 32 + 32 + 32 + 1));
}

TEST_CASE("initial weights are orthogonal with CleanRL's gains and biases are zero", "[params]") {
  const ActorCritic net(4, 2, surge::rl::NetworkConfig{});
  const std::vector<double> params = net.initial_parameters(7);
  const ParamTable& table = net.table();
  for (const auto& slice : table.slices()) {
    if (slice.cols == 1 && slice.name.find("bias") != std::string::npos) {
      for (std::int64_t j = 0; j < slice.size(); ++j) CHECK(params[slice.offset + j] == 0.0);
      continue;
    }
    double gain = std::sqrt(2.0);
    if (slice.name == "actor.2.weight") gain = 0.01;
    if (slice.name == "critic.2.weight") gain = 1.0;
    // W W^T = gain^2 I when rows <= cols, W^T W = gain^2 I otherwise.
    const std::int64_t rows = slice.rows, cols = slice.cols;
    const bool wide = rows <= cols;
    const std::int64_t d = wide ? rows : cols, inner = wide ? cols : rows;
    auto w = [&](std::int64_t i, std::int64_t j) { return params[slice.offset + i * cols + j]; };
    for (std::int64_t p = 0; p < d; ++p)
      for (std::int64_t q = 0; q < d; ++q) {
        double dot = 0.0;
        for (std::int64_t s = 0; s < inner; ++s) dot += wide ? w(p, s) * w(q, s) : w(s, p) * w(s, q);
        const double expected = p == q ? gain * gain : 0.0;
        INFO(slice.name << " " << p << "," << q);
        CHECK(std::abs(dot - expected) <= 1e-12 + 1e-9 * gain * gain);
      }
  }
  // Padding stays zero, and the same seed gives the same parameters; another seed does not.
  std::vector<bool> used(params.size(), false);
  for (const auto& slice : table.slices())
    for (std::int64_t j = 0; j < slice.size(); ++j) used[slice.offset + j] = true;
  for (std::size_t i = 0; i < params.size(); ++i)
    if (!used[i]) CHECK(params[i] == 0.0);
  CHECK(net.initial_parameters(7) == params);
  CHECK(net.initial_parameters(8) != params);
}

TEST_CASE("orthogonal initialisation draws from a standard normal", "[params]") {
  // A square orthogonal matrix's entries have variance 1/n; check the mean square over a large one.
  const std::int64_t n = 256;
  std::vector<double> w(n * n);
  surge::Rng rng(3, surge::rng_subsequence(surge::RngPurpose::Init, 0), 0);
  surge::rl::orthogonal_matrix(n, n, 1.0, rng, w.data());
  double sum_sq = 0.0, sum = 0.0;
  for (double x : w) {
    sum_sq += x * x;
    sum += x;
  }
  CHECK(std::abs(sum_sq - n) < 1e-9 * n);                          // orthogonal: each row has unit norm
  CHECK(std::abs(sum) < 5.0 * std::sqrt(static_cast<double>(n)));  // entries centred on zero: sum ~ N(0, n)
}
