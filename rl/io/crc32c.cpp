#include "rl/io/crc32c.hpp"

#include <array>

namespace surge::rl {
namespace {

// Byte-at-a-time table of the reflected Castagnoli polynomial 0x1EDC6F41.
constexpr std::array<std::uint32_t, 256> make_table() {
  constexpr std::uint32_t reflected_polynomial = 0x82F63B78u;
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? reflected_polynomial : 0u);
    table[byte] = crc;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kTable = make_table();

}  // namespace

std::uint32_t crc32c(const void* bytes, std::size_t count, std::uint32_t crc) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  crc = ~crc;
  for (std::size_t k = 0; k < count; ++k) crc = kTable[(crc ^ p[k]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

}  // namespace surge::rl
