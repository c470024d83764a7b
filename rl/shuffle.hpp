#pragma once
// Minibatch shuffling without a sort: a pseudo-random permutation of [0, n) computed index by index,
// so each thread of a gather kernel finds its sample on its own. It is an eight-round Feistel network
// over the smallest even number of bits (at least 8) that covers n, restricted to [0, n) by cycle walking (an output
// >= n is encrypted again until it falls inside, which keeps the map a bijection). The round keys come
// from Philox, keyed by the run's seed on the Shuffle purpose's stream of this shuffle's number; each
// round mixes its key into one half with a multiply-xorshift hash.
#include <cstdint>

#include "sim/hd.hpp"
#include "sim/philox.hpp"
#include "sim/stream.hpp"

namespace surge::rl {

struct Permutation {
  static constexpr int kRounds = 8;

  std::int64_t size = 0;  // n
  int half_bits = 4;      // the Feistel domain is [0, 4^half_bits): less than 4n, and at least 256
  std::uint64_t seed = 0;
  std::uint32_t keys[kRounds] = {};

  static Permutation make(std::int64_t n, std::uint64_t seed, std::uint64_t shuffle_index) {
    Permutation p;
    p.size = n;
    int bits = 0;
    while ((std::int64_t(1) << bits) < n) ++bits;
    // Below 4 bits a half the rounds cannot mix well; tiny n pays with a few more walks instead.
    p.half_bits = bits < 8 ? 4 : (bits + 1) / 2;
    p.seed = seed;
    return p.with_shuffle(shuffle_index);
  }

  // The same permutation family, for the shuffle numbered `shuffle_index` (read from the device, say):
  // its round keys are the first kRounds words of stream (seed, rng_subsequence(Shuffle, index)).
  SURGE_HD_INLINE Permutation with_shuffle(std::uint64_t shuffle_index) const {
    Permutation p = *this;
    Rng rng(seed, rng_subsequence(RngPurpose::Shuffle, shuffle_index), 0);
    for (int r = 0; r < kRounds; ++r) p.keys[r] = rng.next_u32();
    return p;
  }

  SURGE_HD_INLINE static std::uint32_t mix(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0xD2511F53u;
    x ^= x >> 15;
    x *= 0xCD9E8D57u;
    x ^= x >> 16;
    return x;
  }

  SURGE_HD_INLINE std::uint64_t encrypt(std::uint64_t x) const {
    const std::uint64_t mask = (std::uint64_t(1) << half_bits) - 1;
    std::uint64_t left = x >> half_bits, right = x & mask;
    for (int r = 0; r < kRounds; ++r) {
      const std::uint64_t f = mix(static_cast<std::uint32_t>(right) ^ keys[r]) & mask;
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
// *shuffle_index (device) when given, else the permutation's own keys are used.
void write_permutation(const Stream& stream, const Permutation& permutation, const std::int64_t* shuffle_index,
                       std::int64_t* out);

}  // namespace surge::rl
