// The fused MLP's tanh (rl/fused_mlp_common.hpp: fast_tanh on 16 lanes under AVX-512, 8 under AVX2, with
// GCC) against fast_tanh itself, bit for bit: every 251st float bit pattern (all exponents and signs, mantissas
// scattered), and the edges where fast_tanh changes formula (0.5), saturates (9), and the specials (zeros,
// subnormals, infinities, NaNs). "[.exhaustive]" checks all 2^32 patterns (seconds; not run by ctest).
// Where the lanes are not compiled in, activate() is fast_tanh and the comparison holds trivially.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "rl/fused_mlp_common.hpp"

using namespace surge::rl;

namespace {

float from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// fast_tanh over the array, a plain loop as the fused path ran it before its lanes.
void reference(std::vector<float>& values) {
  for (float& value : values) value = fast_tanh(value);
}

// How many of `inputs` the fused path's tanh maps to other bits than fast_tanh; the first such input in *first.
std::int64_t mismatches(const std::vector<float>& inputs, float* first) {
  std::vector<float> expected = inputs, actual = inputs;
  reference(expected);
  fused::activate(Activation::Tanh, actual.data(), static_cast<std::int64_t>(actual.size()));
  std::int64_t count = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (std::memcmp(&expected[i], &actual[i], sizeof(float)) != 0 && count++ == 0) *first = inputs[i];
  return count;
}

// Bit patterns begin, begin + stride, ... below 2^32, checked in batches.
void check_patterns(std::uint64_t begin, std::uint64_t stride) {
  constexpr std::size_t kBatch = 1 << 20;
  std::vector<float> inputs;
  inputs.reserve(kBatch);
  std::int64_t total = 0;
  float first = 0.0f;
  for (std::uint64_t bits = begin; bits < (std::uint64_t{1} << 32); bits += stride) {
    inputs.push_back(from_bits(static_cast<std::uint32_t>(bits)));
    if (inputs.size() == kBatch || bits + stride >= (std::uint64_t{1} << 32)) {
      total += mismatches(inputs, &first);
      inputs.clear();
    }
  }
  INFO("first input that differs: " << first);
  CHECK(total == 0);
}

}  // namespace

TEST_CASE("The fused path's tanh is fast_tanh's bits on a strided subset of all floats", "[tanh][fused]") {
  check_patterns(12345, 251);
}

TEST_CASE("The fused path's tanh is fast_tanh's bits at its edges and on special values", "[tanh][fused]") {
  std::vector<float> inputs;
  const float inf = std::numeric_limits<float>::infinity();
  for (const float edge : {0.0f, 0.5f, 9.0f, 1.0f, 2.0f, 4.0f, 8.0f, 1e-30f, std::numeric_limits<float>::min(),
                           std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max(), inf}) {
    float below = edge, above = edge;
    for (int step = 0; step < 40; ++step) {  // 40 floats either side of each edge, with both signs
      inputs.insert(inputs.end(), {below, -below, above, -above});
      below = std::nextafter(below, -inf);
      above = std::nextafter(above, inf);
    }
  }
  for (const std::uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0xff800001u, 0x7fffffffu})
    inputs.push_back(from_bits(nan));
  inputs.resize((inputs.size() + 15) / 16 * 16 + 5, 0.75f);  // and a remainder past whole vectors
  float first = 0.0f;
  const std::int64_t count = mismatches(inputs, &first);
  INFO("first input that differs: " << first);
  CHECK(count == 0);
}

TEST_CASE("The fused path's tanh is fast_tanh's bits on all 2^32 floats", "[.exhaustive][tanh][fused]") {
  check_patterns(0, 1);
}
