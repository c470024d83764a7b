#pragma once
// CRC-32C (Castagnoli), the checksum of TFRecord framing and of many storage formats.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace surge::rl {

// Extends `crc` (the CRC of the bytes before) over `bytes`; crc32c(x) of "123456789" is 0xE3069283.
std::uint32_t crc32c(const void* bytes, std::size_t count, std::uint32_t crc = 0);
inline std::uint32_t crc32c(std::string_view bytes) { return crc32c(bytes.data(), bytes.size()); }

// The rotated-and-offset form TFRecord stores, so that a CRC over data holding CRCs stays strong.
inline std::uint32_t mask_crc32c(std::uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline std::uint32_t unmask_crc32c(std::uint32_t masked) {
  const std::uint32_t rotated = masked - 0xa282ead8u;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace surge::rl
