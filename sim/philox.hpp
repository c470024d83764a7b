#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), written once
// for host and device. `Rng` reproduces cuRAND's curandStatePhilox4_32_10_t exactly:
// Rng(seed, subsequence, offset) yields the same 32-bit words as
// curand_init(seed, subsequence, offset, &state) followed by curand(&state), and uniform() the same
// floats as curand_uniform(). Counter-based: a stream is (seed, subsequence), and the position in it
// is a plain 64-bit counter that callers keep in flat arrays, so no generator state lives on the device.
#include <bit>
#include <cmath>
#include <cstdint>

#include "sim/hd.hpp"

namespace surge {

struct PhiloxBlock {
  std::uint32_t v[4];
};

namespace philox_detail {
constexpr std::uint32_t kMul0 = 0xD2511F53u;
constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

SURGE_HD_INLINE void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b);
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}
}  // namespace philox_detail

// The bijection: ten rounds over a 128-bit counter under a 64-bit key.
SURGE_HD_INLINE PhiloxBlock philox4x32_10(PhiloxBlock counter, std::uint32_t key0, std::uint32_t key1) {
  using namespace philox_detail;
  std::uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c0, hi0, lo0);
    mulhilo(kMul1, c2, hi1, lo1);
    const std::uint32_t n0 = hi1 ^ c1 ^ key0;
    const std::uint32_t n2 = hi0 ^ c3 ^ key1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    key0 += kWeyl0;
    key1 += kWeyl1;
  }
  return {{c0, c1, c2, c3}};
}

// Converts 32 random bits to a float in (0, 1], exactly as cuRAND's curand_uniform does.
SURGE_HD_INLINE float uint_to_uniform(std::uint32_t bits) {
  constexpr float kTwoPowMinus32 = 2.3283064e-10f;
  return static_cast<float>(bits) * kTwoPowMinus32 + kTwoPowMinus32 / 2.0f;
}

// Which subsequences a run uses. One seed serves the whole run; each purpose gets its own range of
// subsequences so that, say, resetting env 7 never shares numbers with sampling its actions.
enum class RngPurpose : std::uint64_t { EnvReset = 0, Action = 1, Shuffle = 2, Init = 3 };
SURGE_HD_INLINE std::uint64_t rng_subsequence(RngPurpose purpose, std::uint64_t index) {
  return (static_cast<std::uint64_t>(purpose) << 48) | index;
}

// Block `block_index` of the stream (seed, subsequence): the four words at offsets 4 * block_index ...
// 4 * block_index + 3, as cuRAND's Philox generator lays its counter out.
SURGE_HD_INLINE PhiloxBlock philox_block(std::uint64_t seed, std::uint64_t subsequence, std::uint64_t block_index) {
  const PhiloxBlock counter = {{static_cast<std::uint32_t>(block_index), static_cast<std::uint32_t>(block_index >> 32),
                                static_cast<std::uint32_t>(subsequence),
                                static_cast<std::uint32_t>(subsequence >> 32)}};
  return philox4x32_10(counter, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

// The largest float below `high`, for any `high` but NaN and -infinity: nextafterf(high, low) for any
// low < high, as bit arithmetic rather than a library call, so that a loop over many lanes vectorises.
// A positive float's successor downwards has the bits below its own; a negative one's (and -0's) the bits
// above; +0 goes to the negative denormal -0x1p-149.
SURGE_HD_INLINE float float_below(float high) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(high);
  const std::uint32_t below = bits == 0u ? 0x80000001u : (bits >> 31) != 0u ? bits + 1u : bits - 1u;
  return std::bit_cast<float>(below);
}

// A float uniform in [low, high) from 32 random bits: the top 24 bits scaled exactly into [0, 1), then
// low + (high - low) * v. On the device the multiply and the add are rounded separately, as on the
// host: nvcc would otherwise fuse them into one FMA and resets and randomised physics would differ
// from the CPU's in their last bit. A result that rounds up onto `high` is moved just below it.
SURGE_HD_INLINE float uniform_in(std::uint32_t bits, float low, float high) {
  const float unit = static_cast<float>(bits >> 8) * 5.9604644775390625e-8f;  // 2^-24
#if defined(__CUDA_ARCH__)
  const float value = __fadd_rn(low, __fmul_rn(high - low, unit));
#else
  const float value = low + (high - low) * unit;
#endif
  return value < high || !(low < high) ? value : float_below(high);
}

// A cursor into one Philox stream. Cheap to build on every use from (seed, subsequence, offset): a block
// is computed only when a word of it is first drawn, so a cursor that draws nothing costs nothing, and
// one that ends on a block boundary does not compute the next block.
class Rng {
 public:
  SURGE_HD_INLINE Rng() : seed_(0), subsequence_(0), offset_(0), block_{}, have_block_(false) {}  // assign a real one
  SURGE_HD_INLINE Rng(std::uint64_t seed, std::uint64_t subsequence, std::uint64_t offset)
      : seed_(seed), subsequence_(subsequence), offset_(offset), block_{}, have_block_(false) {}
  // The same cursor, given the block at `offset`, philox_block(seed, subsequence, offset / 4), already
  // computed (the CPU rollout draws those for many streams side by side).
  SURGE_HD_INLINE Rng(std::uint64_t seed, std::uint64_t subsequence, std::uint64_t offset, const PhiloxBlock& block)
      : seed_(seed), subsequence_(subsequence), offset_(offset), block_(block), have_block_(true) {}

  // The next 32 random bits (cuRAND's curand()).
  SURGE_HD_INLINE std::uint32_t next_u32() {
    if (!have_block_) {
      block_ = philox_block(seed_, subsequence_, offset_ >> 2);
      have_block_ = true;
    }
    const std::uint32_t word = block_.v[offset_ & 3u];
    ++offset_;
    if ((offset_ & 3u) == 0) have_block_ = false;
    return word;
  }
  // Uniform in (0, 1] (cuRAND's curand_uniform()).
  SURGE_HD_INLINE float uniform() { return uint_to_uniform(next_u32()); }
  // Uniform in [low, high): see uniform_in().
  SURGE_HD_INLINE float uniform(float low, float high) { return uniform_in(next_u32(), low, high); }

  // How many 32-bit words of the stream have been consumed: store it, and rebuild the Rng from it.
  SURGE_HD_INLINE std::uint64_t offset() const { return offset_; }

 private:
  std::uint64_t seed_;
  std::uint64_t subsequence_;
  std::uint64_t offset_;
  PhiloxBlock block_;
  bool have_block_;
};

}  // namespace surge
