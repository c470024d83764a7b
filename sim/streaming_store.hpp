#pragma once
// Streaming (non-temporal) stores for the CPU backend: a copy whose destination bypasses the caches, so
// that writing a buffer larger than the last-level cache neither reads each line in before writing it
// nor evicts what the caches hold. Host only; plain memcpy where the instruction set or the alignment
// does not allow them. After streaming stores, streaming_fence() orders them before later stores, which
// another thread must see first (the end of an OpenMP loop alone does not).
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define SURGE_HAVE_STREAMING_STORES 1
#endif

namespace surge {

// dst[0 .. bytes) = src[0 .. bytes); src must be 64-byte aligned.
inline void copy_streaming(void* dst, const void* src, std::size_t bytes) {
#if defined(SURGE_HAVE_STREAMING_STORES)
#if defined(__AVX512F__)
  using Word = __m512i;
#elif defined(__AVX__)
  using Word = __m256i;
#else
  using Word = __m128i;
#endif
  if (reinterpret_cast<std::uintptr_t>(dst) % sizeof(Word) == 0 && bytes % sizeof(Word) == 0) {
    Word* out = static_cast<Word*>(dst);
    const Word* in = static_cast<const Word*>(src);
    for (std::size_t k = 0; k < bytes / sizeof(Word); ++k) {
#if defined(__AVX512F__)
      _mm512_stream_si512(out + k, _mm512_load_si512(in + k));
#elif defined(__AVX__)
      _mm256_stream_si256(out + k, _mm256_load_si256(in + k));
#else
      _mm_stream_si128(out + k, _mm_load_si128(in + k));
#endif
    }
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

inline void streaming_fence() {
#if defined(SURGE_HAVE_STREAMING_STORES)
  _mm_sfence();
#endif
}

}  // namespace surge
