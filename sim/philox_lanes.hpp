#pragma once
// Philox blocks for many streams side by side, for the CPU backend's loops over lanes of environments
// (sim/fused_rollout.cuh). The same words as philox_block, lane by lane. With AVX-512 each 32 x 32 -> 64
// bit product of a round is one vpmuludq on eight lanes held in 64-bit slots (compilers vectorise the
// portable loop with full 64 x 64 bit multiplies, about three times the work); with AVX2 the same on four
// lanes a register (without AVX-512's 64 x 64 bit multiply, GCC leaves the portable loop scalar);
// elsewhere, and in nvcc's device pass, the portable loop. Host only.
#include <cstdint>
#include <type_traits>

#include "sim/philox.hpp"

#if defined(__AVX512F__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define SURGE_HAVE_PHILOX_LANES_AVX512 1
#elif defined(__AVX2__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define SURGE_HAVE_PHILOX_LANES_AVX2 1
#endif

namespace surge {

// The ten rounds' keys of Philox4x32-10 under `seed`, for the vectorised forms below.
struct PhiloxRoundKeys {
  std::uint32_t key0[10], key1[10];
};

inline PhiloxRoundKeys philox_round_keys(std::uint64_t seed) {
  PhiloxRoundKeys keys;
  std::uint32_t key0 = static_cast<std::uint32_t>(seed), key1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round, key0 += philox_detail::kWeyl0, key1 += philox_detail::kWeyl1) {
    keys.key0[round] = key0;
    keys.key1[round] = key1;
  }
  return keys;
}

// words[m][l] = philox_block(seed, first_subsequence + l, block_index[l]).v[m] for every l < kLanes and
// m < 4: `words` points to four rows of kLanes words.
template <int kLanes>
inline void philox_block_lanes(std::uint64_t seed, std::uint64_t first_subsequence,
                               const std::uint64_t (&block_index)[kLanes], std::uint32_t (*words)[kLanes]) {
#if defined(SURGE_HAVE_PHILOX_LANES_AVX512)
  if constexpr (kLanes % 8 == 0) {
    using namespace philox_detail;
    const __m512i mul0 = _mm512_set1_epi64(kMul0), mul1 = _mm512_set1_epi64(kMul1);
    // The zero-masked forms, with every lane selected, are the plain instructions (GCC 12 warns about
    // the undefined pass-through operand of the unmasked intrinsics).
    constexpr __mmask8 kAll = 0xff;
    const __m512i lane_numbers = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const PhiloxRoundKeys keys = philox_round_keys(seed);
    __m512i round_key0[10], round_key1[10];
    for (int round = 0; round < 10; ++round) {
      round_key0[round] = _mm512_set1_epi64(keys.key0[round]);
      round_key1[round] = _mm512_set1_epi64(keys.key1[round]);
    }
    for (int l = 0; l < kLanes; l += 8) {
      // Each 64-bit slot holds one 32-bit word of a lane's counter in its low half; the high halves
      // carry junk that no low half ever depends on, and are dropped at the end.
      const __m512i index = _mm512_loadu_si512(&block_index[l]);
      const __m512i subsequence =
          _mm512_add_epi64(_mm512_set1_epi64(static_cast<long long>(first_subsequence + l)), lane_numbers);
      __m512i c0 = index, c1 = _mm512_maskz_srli_epi64(kAll, index, 32);
      __m512i c2 = subsequence, c3 = _mm512_maskz_srli_epi64(kAll, subsequence, 32);
      for (int round = 0; round < 10; ++round) {
        const __m512i product0 = _mm512_maskz_mul_epu32(kAll, c0, mul0);  // hi0:lo0
        const __m512i product1 = _mm512_maskz_mul_epu32(kAll, c2, mul1);  // hi1:lo1
        // 0x96: a ^ b ^ c.
        c0 = _mm512_ternarylogic_epi64(_mm512_maskz_srli_epi64(kAll, product1, 32), c1, round_key0[round], 0x96);
        c2 = _mm512_ternarylogic_epi64(_mm512_maskz_srli_epi64(kAll, product0, 32), c3, round_key1[round], 0x96);
        c1 = product1;
        c3 = product0;
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&words[0][l]), _mm512_maskz_cvtepi64_epi32(kAll, c0));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&words[1][l]), _mm512_maskz_cvtepi64_epi32(kAll, c1));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&words[2][l]), _mm512_maskz_cvtepi64_epi32(kAll, c2));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(&words[3][l]), _mm512_maskz_cvtepi64_epi32(kAll, c3));
    }
    return;
  }
#elif defined(SURGE_HAVE_PHILOX_LANES_AVX2)
  if constexpr (kLanes % 4 == 0) {
    using namespace philox_detail;
    const __m256i mul0 = _mm256_set1_epi64x(kMul0), mul1 = _mm256_set1_epi64x(kMul1);
    const __m256i lane_numbers = _mm256_set_epi64x(3, 2, 1, 0);
    // The low halves of the four 64-bit slots, gathered into the register's low 128 bits.
    const __m256i low_halves = _mm256_set_epi32(6, 4, 2, 0, 6, 4, 2, 0);
    const PhiloxRoundKeys keys = philox_round_keys(seed);
    __m256i round_key0[10], round_key1[10];
    for (int round = 0; round < 10; ++round) round_key0[round] = _mm256_set1_epi64x(keys.key0[round]);
    for (int round = 0; round < 10; ++round) round_key1[round] = _mm256_set1_epi64x(keys.key1[round]);
    const auto store_low_halves = [&](std::uint32_t* to, __m256i slots) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to),
                       _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(slots, low_halves)));
    };
    // Two groups of four lanes at a time, their rounds interleaved: a round's multiply, shift and XORs form a
    // chain, and a second chain beside it keeps the multiplier busy while the first waits.
    const auto rounds = [&]<int kGroups>(int l, std::integral_constant<int, kGroups>) {
      __m256i c0[kGroups], c1[kGroups], c2[kGroups], c3[kGroups];
      for (int g = 0; g < kGroups; ++g) {
        // As above: a word of a lane's counter in each slot's low half, junk in the high halves.
        const __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&block_index[l + 4 * g]));
        const __m256i subsequence =
            _mm256_add_epi64(_mm256_set1_epi64x(static_cast<long long>(first_subsequence + l + 4 * g)), lane_numbers);
        c0[g] = index;
        c1[g] = _mm256_srli_epi64(index, 32);
        c2[g] = subsequence;
        c3[g] = _mm256_srli_epi64(subsequence, 32);
      }
      for (int round = 0; round < 10; ++round) {
        for (int g = 0; g < kGroups; ++g) {
          const __m256i product0 = _mm256_mul_epu32(c0[g], mul0);  // hi0:lo0
          const __m256i product1 = _mm256_mul_epu32(c2[g], mul1);  // hi1:lo1
          c0[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product1, 32), c1[g]), round_key0[round]);
          c2[g] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(product0, 32), c3[g]), round_key1[round]);
          c1[g] = product1;
          c3[g] = product0;
        }
      }
      for (int g = 0; g < kGroups; ++g) {
        store_low_halves(&words[0][l + 4 * g], c0[g]);
        store_low_halves(&words[1][l + 4 * g], c1[g]);
        store_low_halves(&words[2][l + 4 * g], c2[g]);
        store_low_halves(&words[3][l + 4 * g], c3[g]);
      }
    };
    int l = 0;
    for (; l + 8 <= kLanes; l += 8) rounds(l, std::integral_constant<int, 2>{});
    if (l < kLanes) rounds(l, std::integral_constant<int, 1>{});
    return;
  }
#endif
  for (int l = 0; l < kLanes; ++l) {
    const PhiloxBlock block = philox_block(seed, first_subsequence + static_cast<std::uint64_t>(l), block_index[l]);
    for (int m = 0; m < 4; ++m) words[m][l] = block.v[m];
  }
}

}  // namespace surge
