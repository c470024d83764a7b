#include "tools/video/png.hpp"

#include <cstring>

#include "sim/error.hpp"

#if SURGE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace surge::video {
namespace {

std::uint32_t crc32_of(const std::uint8_t* data, std::size_t size, std::uint32_t crc = 0) {
  crc = ~crc;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(value >> shift));
}

void put_chunk(std::vector<std::uint8_t>& out, const char type[4], const std::vector<std::uint8_t>& data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put_u32(out, crc32_of(out.data() + start, out.size() - start));
}

// A zlib stream of `raw`: deflated when zlib is at hand, else in stored blocks of at most 65535 bytes.
std::vector<std::uint8_t> zlib_stream(const std::vector<std::uint8_t>& raw) {
#if SURGE_HAVE_ZLIB
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::vector<std::uint8_t> out(size);
  SURGE_CHECK(compress2(out.data(), &size, raw.data(), static_cast<uLong>(raw.size()), 6) == Z_OK, "zlib failed");
  out.resize(size);
  return out;
#else
  std::vector<std::uint8_t> out = {0x78, 0x01};
  std::size_t at = 0;
  do {
    const std::size_t block = std::min<std::size_t>(raw.size() - at, 65535);
    out.push_back(at + block == raw.size() ? 1 : 0);
    const std::uint16_t length = static_cast<std::uint16_t>(block), inverse = static_cast<std::uint16_t>(~length);
    out.insert(out.end(), {static_cast<std::uint8_t>(length), static_cast<std::uint8_t>(length >> 8),
                           static_cast<std::uint8_t>(inverse), static_cast<std::uint8_t>(inverse >> 8)});
    out.insert(out.end(), raw.begin() + static_cast<std::ptrdiff_t>(at),
               raw.begin() + static_cast<std::ptrdiff_t>(at + block));
    at += block;
  } while (at < raw.size());
  std::uint32_t a = 1, b = 0;
  for (std::uint8_t byte : raw) a = (a + byte) % 65521, b = (b + a) % 65521;
  put_u32(out, (b << 16) | a);
  return out;
#endif
}

}  // namespace

std::vector<std::uint8_t> encode_png(const std::uint8_t* pixels, int width, int height, int channels) {
  SURGE_CHECK(width > 0 && height > 0 && (channels == 1 || channels == 3), "bad image shape");
  const std::size_t row_bytes = static_cast<std::size_t>(width) * channels;
  std::vector<std::uint8_t> raw;
  raw.reserve((row_bytes + 1) * height);
  for (int row = 0; row < height; ++row) {
    raw.push_back(0);  // filter: none
    raw.insert(raw.end(), pixels + row * row_bytes, pixels + (row + 1) * row_bytes);
  }
  std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<std::uint8_t> header;
  put_u32(header, static_cast<std::uint32_t>(width));
  put_u32(header, static_cast<std::uint32_t>(height));
  header.insert(header.end(), {8, static_cast<std::uint8_t>(channels == 3 ? 2 : 0), 0, 0, 0});
  put_chunk(out, "IHDR", header);
  put_chunk(out, "IDAT", zlib_stream(raw));
  put_chunk(out, "IEND", {});
  return out;
}

}  // namespace surge::video
