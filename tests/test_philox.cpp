// Philox4x32-10 against the known-answer vectors published with the algorithm (Random123's
// kat_vectors), and the cuRAND-compatible stream arithmetic of Rng.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstdint>

#include "sim/philox.hpp"
#include "sim/philox_lanes.hpp"

using surge::PhiloxBlock;
using surge::Rng;

TEST_CASE("philox4x32-10 matches the published known-answer vectors", "[philox]") {
  struct Vector {
    PhiloxBlock counter;
    std::uint32_t key0, key1;
    PhiloxBlock expected;
  };
  const Vector vectors[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Vector& v : vectors) {
    const PhiloxBlock out = surge::philox4x32_10(v.counter, v.key0, v.key1);
    for (int k = 0; k < 4; ++k) CHECK(out.v[k] == v.expected.v[k]);
  }
}

TEST_CASE("Rng walks the stream as cuRAND's curand() does", "[philox]") {
  const std::uint64_t seed = 0x0123456789abcdefull, subsequence = 7;
  // Word w of the stream is word w%4 of block w/4, whose counter is (w/4 as 64 bits, subsequence as 64 bits)
  // and whose key is the seed split into two 32-bit halves.
  Rng rng(seed, subsequence, 0);
  for (std::uint64_t w = 0; w < 40; ++w) {
    const std::uint64_t block = w / 4;
    const PhiloxBlock counter = {{static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
                                  static_cast<std::uint32_t>(subsequence),
                                  static_cast<std::uint32_t>(subsequence >> 32)}};
    const PhiloxBlock expected = surge::philox4x32_10(counter, 0x89abcdefu, 0x01234567u);
    CHECK(rng.next_u32() == expected.v[w % 4]);
  }
  CHECK(rng.offset() == 40);
}

TEST_CASE("an Rng rebuilt from a stored offset continues the same stream", "[philox]") {
  for (std::uint64_t split : {0u, 1u, 3u, 4u, 5u, 11u}) {
    Rng whole(42, 3, 0);
    Rng first(42, 3, 0);
    for (std::uint64_t k = 0; k < split; ++k) REQUIRE(first.next_u32() == whole.next_u32());
    Rng resumed(42, 3, first.offset());
    for (int k = 0; k < 13; ++k) REQUIRE(resumed.next_u32() == whole.next_u32());
  }
}

TEST_CASE("different subsequences and seeds give different streams", "[philox]") {
  Rng a(1, 0, 0), b(1, 1, 0), c(2, 0, 0);
  int same_ab = 0, same_ac = 0;
  for (int k = 0; k < 64; ++k) {
    const auto x = a.next_u32(), y = b.next_u32(), z = c.next_u32();
    same_ab += x == y;
    same_ac += x == z;
  }
  CHECK(same_ab < 2);
  CHECK(same_ac < 2);
}

TEST_CASE("uniform floats follow curand_uniform's mapping into (0, 1]", "[philox]") {
  CHECK(surge::uint_to_uniform(0u) > 0.0f);
  CHECK(surge::uint_to_uniform(0xffffffffu) == 1.0f);
  CHECK(surge::uint_to_uniform(0x80000000u) == Approx(0.5f).margin(1e-7));
  Rng rng(9, 0, 0);
  double sum = 0, sum_sq = 0;
  const int n = 200000;
  for (int k = 0; k < n; ++k) {
    const float u = rng.uniform(-0.05f, 0.05f);
    REQUIRE(u >= -0.05f);
    REQUIRE(u < 0.05f);
    sum += u;
    sum_sq += double(u) * u;
  }
  const double mean = sum / n, variance = sum_sq / n - mean * mean;
  CHECK(std::abs(mean) < 4 * 0.1 / std::sqrt(12.0 * n));  // four standard errors
  CHECK(variance == Approx(0.01 / 12.0).epsilon(0.02));
}

// philox_block_lanes<kLanes> against philox_block, lane by lane: counters with both 32-bit halves in use, and
// lanes whose subsequences cross a 2^32 boundary.
template <int kLanes>
void check_block_lanes() {
  const std::uint64_t seeds[] = {0, 1, 0xfedcba9876543210ull};
  const std::uint64_t first_subsequences[] = {0, 0xfffffff0ull, (1ull << 48) | 12345};
  Rng picks(3, 0, 0);
  for (std::uint64_t seed : seeds)
    for (std::uint64_t first : first_subsequences) {
      std::uint64_t block_index[kLanes];
      for (int l = 0; l < kLanes; ++l)
        block_index[l] =
            l < 2 ? std::uint64_t(l) * 0xffffffffull : (std::uint64_t(picks.next_u32()) << 32) | picks.next_u32();
      std::uint32_t words[4][kLanes];
      surge::philox_block_lanes<kLanes>(seed, first, block_index, words);
      for (int l = 0; l < kLanes; ++l) {
        const PhiloxBlock expected = surge::philox_block(seed, first + l, block_index[l]);
        for (int m = 0; m < 4; ++m) CHECK(words[m][l] == expected.v[m]);
      }
    }
}

TEST_CASE("philox_block_lanes gives philox_block's words lane by lane", "[philox]") {
  // Built with the hot loops' flags (on an AVX-512 or AVX2 machine a vectorised form), and again for AVX2 as
  // test_philox_avx2. 24 lanes: the AVX2 form's pairs of four-lane groups only; 28: a group left over (and
  // on AVX-512, not a multiple of eight, the portable loop).
  check_block_lanes<24>();
  check_block_lanes<28>();
}

TEST_CASE("an Rng given its block draws the words of one that computes it", "[philox]") {
  for (std::uint64_t offset : {0u, 1u, 3u, 4u, 6u}) {
    Rng computed(42, 9, offset);
    Rng given(42, 9, offset, surge::philox_block(42, 9, offset / 4));
    for (int k = 0; k < 11; ++k) REQUIRE(given.next_u32() == computed.next_u32());
    CHECK(given.offset() == offset + 11);
  }
}

TEST_CASE("float_below is nextafterf towards anything lower", "[philox]") {
  // The edges (zeros, denormals, the largest float, infinity, both signs) and a stride through every float.
  const float edges[] = {0.0f,  -0.0f, 0x1p-149f, -0x1p-149f,    0x1p-126f,      -0x1p-126f, 1.0f,
                         -1.0f, 0.05f, -0.05f,    3.4028235e38f, -3.4028235e38f, INFINITY};
  for (const float high : edges) {
    INFO(high);
    CHECK(std::bit_cast<std::uint32_t>(surge::float_below(high)) ==
          std::bit_cast<std::uint32_t>(std::nextafterf(high, -INFINITY)));
  }
  int checked = 0;
  for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << 32); bits += 65521) {
    const float high = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    if (std::isnan(high) || high == -INFINITY) continue;
    REQUIRE(std::bit_cast<std::uint32_t>(surge::float_below(high)) ==
            std::bit_cast<std::uint32_t>(std::nextafterf(high, -INFINITY)));
    ++checked;
  }
  CHECK(checked > 60000);
}
