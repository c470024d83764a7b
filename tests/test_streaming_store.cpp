// copy_streaming: the same bytes as memcpy at every alignment of the destination and every size, the
// streaming path (aligned, whole vectors) and the plain fallback alike, and nothing written outside.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "sim/streaming_store.hpp"

TEST_CASE("copy_streaming copies exactly the bytes asked, at any alignment", "[streaming_store]") {
  alignas(64) std::uint8_t source[4096];
  for (int k = 0; k < 4096; ++k) source[k] = static_cast<std::uint8_t>(k * 7 + 3);
  const std::uint8_t kUntouched = 0xA5;
  for (const std::size_t bytes : {std::size_t(0), std::size_t(1), std::size_t(15), std::size_t(16), std::size_t(63),
                                  std::size_t(64), std::size_t(128), std::size_t(1000), std::size_t(4096)}) {
    for (std::size_t offset = 0; offset < 64; ++offset) {
      alignas(64) std::uint8_t target[4096 + 128];
      for (auto& b : target) b = kUntouched;
      surge::copy_streaming(target + offset, source, bytes);
      surge::streaming_fence();
      INFO("bytes " << bytes << ", destination offset " << offset);
      std::size_t wrong = 0, outside = 0;
      for (std::size_t k = 0; k < bytes; ++k) wrong += target[offset + k] != source[k];
      for (std::size_t k = 0; k < sizeof target; ++k)
        if (k < offset || k >= offset + bytes) outside += target[k] != kUntouched;
      CHECK(wrong == 0);
      CHECK(outside == 0);
    }
  }
}
