#pragma once
// The transpose that repacks the fused fp32/fp64 path's weights (rl/fused_mlp.cpp): internal to that file,
// plain C++, never seen by nvcc.
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>
#include <type_traits>

namespace surge::rl::fused {

#if defined(__AVX512F__)
// One round of a 16 x 16 transpose: in every square of 2 half x 2 half floats, swap the off-diagonal halves.
template <int half>
inline void swap_off_diagonal(__m512 (&square)[16]) {
  struct Indices {  // lane j of a pair (a, b) of rows: index j of a, 16 + j of b
    alignas(64) std::int32_t low[16], high[16];
    constexpr Indices() : low(), high() {
      for (int j = 0; j < 16; ++j) {
        low[j] = (j & half) ? 16 + j - half : j;
        high[j] = (j & half) ? 16 + j : j + half;
      }
    }
  };
  static constexpr Indices indices;
  const __m512i low = _mm512_load_si512(indices.low), high = _mm512_load_si512(indices.high);
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r)
    if (!(r & half)) {
      const __m512 a = square[r], b = square[r + half];
      square[r] = _mm512_permutex2var_ps(a, low, b);
      square[r + half] = _mm512_permutex2var_ps(a, high, b);
    }
}
#endif

// dst [cols][ldd] = src [rows][cols]^T. Under AVX-512, whole 16 x 16 squares of floats go through
// two-register permutes; the edges, and other types and machines, one element at a time.
template <class Scalar>
void transpose(const Scalar* src, int rows, int cols, Scalar* dst, std::int64_t ldd) {
  int whole_rows = 0, whole_cols = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<Scalar, float>) {
    whole_rows = rows / 16 * 16;
    whole_cols = cols / 16 * 16;
    for (int r0 = 0; r0 < whole_rows; r0 += 16)
      for (int c0 = 0; c0 < whole_cols; c0 += 16) {
        __m512 square[16];
#pragma GCC unroll 16
        for (int r = 0; r < 16; ++r) square[r] = _mm512_loadu_ps(src + (r0 + r) * cols + c0);
        swap_off_diagonal<8>(square);
        swap_off_diagonal<4>(square);
        swap_off_diagonal<2>(square);
        swap_off_diagonal<1>(square);
#pragma GCC unroll 16
        for (int c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (c0 + c) * ldd + r0, square[c]);
      }
  }
#endif
  for (int r = 0; r < rows; ++r)
    for (int c = r < whole_rows ? whole_cols : 0; c < cols; ++c) dst[c * ldd + r] = src[r * cols + c];
}

}  // namespace surge::rl::fused
