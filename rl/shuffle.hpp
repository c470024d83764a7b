#pragma once
// Minibatch shuffling without a sort: a pseudo-random permutation of [0, n) computed index by index,
// so each thread of a gather kernel finds its sample on its own. It is a Feistel network over the
// smallest even number of bits that covers n, with Philox (keyed by the run's seed, counter on the
// Shuffle purpose's stream) as the round function, restricted to [0, n) by cycle walking: an output
// >= n is encrypted again until it falls inside, which keeps the map a bijection.
#include <cstdint>

#include "sim/hd.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

struct Permutation {
  // Four rounds make a strong pseudo-random permutation of large domains; the smallest domains (a few
  // bits per half) need more before single positions come out uniform.
  static constexpr std::uint32_t kRounds = 8;

  std::int64_t size = 0;      // n
  int half_bits = 1;          // the Feistel domain is [0, 4^half_bits), at most 4n
  std::uint64_t seed = 0;
  std::uint64_t subsequence = 0;  // rng_subsequence(Shuffle, which shuffle)

  static Permutation make(std::int64_t n, std::uint64_t seed, std::uint64_t shuffle_index) {
    Permutation p;
    p.size = n;
    int bits = 0;
    while ((std::int64_t(1) << bits) < n) ++bits;
    p.half_bits = bits < 2 ? 1 : (bits + 1) / 2;
    p.seed = seed;
    p.subsequence = rng_subsequence(RngPurpose::Shuffle, shuffle_index);
    return p;
  }

  // The same permutation, for the shuffle numbered `shuffle_index` (read from the device, say).
  SURGE_HD_INLINE Permutation with_shuffle(std::uint64_t shuffle_index) const {
    Permutation p = *this;
    p.subsequence = rng_subsequence(RngPurpose::Shuffle, shuffle_index);
    return p;
  }

  SURGE_HD_INLINE std::uint64_t encrypt(std::uint64_t x) const {
    const std::uint64_t mask = (std::uint64_t(1) << half_bits) - 1;
    std::uint64_t left = x >> half_bits, right = x & mask;
    for (std::uint32_t round = 0; round < kRounds; ++round) {
      const PhiloxBlock block = philox4x32_10(
          {{static_cast<std::uint32_t>(right), static_cast<std::uint32_t>(right >> 32) ^ (round << 24),
            static_cast<std::uint32_t>(subsequence), static_cast<std::uint32_t>(subsequence >> 32)}},
          static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
      const std::uint64_t f = (static_cast<std::uint64_t>(block.v[1]) << 32 | block.v[0]) & mask;
      const std::uint64_t next_right = left ^ f;
      left = right;
      right = next_right;
    }
    return left << half_bits | right;
  }

  // The image of index in [0, n).
  SURGE_HD_INLINE std::int64_t operator()(std::int64_t index) const {
    std::uint64_t x = static_cast<std::uint64_t>(index);
    do {
      x = encrypt(x);
    } while (x >= static_cast<std::uint64_t>(size));
    return static_cast<std::int64_t>(x);
  }
};

// out[j] = permutation(j) for j in [0, n), on the stream's device; the shuffle number is read from
// *shuffle_index (device) when given, else the permutation's own is used.
void write_permutation(const Stream& stream, const Permutation& permutation, const std::int64_t* shuffle_index,
                       std::int64_t* out);

}  // namespace surge::rl
