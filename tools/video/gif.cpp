#include "tools/video/gif.hpp"

#include "sim/error.hpp"

namespace surge::video {
namespace {

constexpr std::uint8_t kSceneColours[][3] = {{202, 152, 101}, {129, 132, 203}, {0, 204, 204}, {204, 204, 0},
                                             {204, 77, 77},   {128, 128, 128}, {0, 0, 255}};

void put_u16(std::vector<std::uint8_t>& out, int value) {
  out.push_back(static_cast<std::uint8_t>(value & 0xFF));
  out.push_back(static_cast<std::uint8_t>((value >> 8) & 0xFF));
}

std::vector<std::uint8_t> scene_palette() {
  std::vector<std::uint8_t> p;
  auto add = [&](int r, int g, int b) {
    p.insert(p.end(), {static_cast<std::uint8_t>(r), static_cast<std::uint8_t>(g), static_cast<std::uint8_t>(b)});
  };
  for (int i = 0; i < 32; ++i) add(i * 255 / 31, i * 255 / 31, i * 255 / 31);
  for (const auto& c : kSceneColours)
    for (int k = 1; k <= 16; ++k) {
      auto blend = [&](int channel) { return (255 * (16 - k) + c[channel] * k + 8) / 16; };
      add(blend(0), blend(1), blend(2));
    }
  for (int r = 0; r < 5; ++r)
    for (int g = 0; g < 5; ++g)
      for (int b = 0; b < 4; ++b) add(r * 255 / 4, g * 255 / 4, b * 255 / 3);
  p.resize(256 * 3, 0);
  return p;
}

// Bits to bytes, least significant first, as GIF packs its codes.
struct BitPacker {
  std::vector<std::uint8_t> bytes;
  std::uint32_t buffer = 0;
  int count = 0;
  void put(int code, int size) {
    buffer |= static_cast<std::uint32_t>(code) << count;
    count += size;
    while (count >= 8) {
      bytes.push_back(static_cast<std::uint8_t>(buffer & 0xFF));
      buffer >>= 8, count -= 8;
    }
  }
  void flush() {
    if (count > 0) bytes.push_back(static_cast<std::uint8_t>(buffer & 0xFF));
    buffer = 0, count = 0;
  }
};

}  // namespace

GifEncoder::GifEncoder(int width, int height, int delay_centiseconds)
    : width_(width), height_(height), delay_(delay_centiseconds), palette_(scene_palette()), nearest_(32 * 32 * 32) {
  SURGE_CHECK(width > 0 && height > 0 && width < 65536 && height < 65536, "bad GIF size");
  for (int cell = 0; cell < 32 * 32 * 32; ++cell) {
    const int r = (cell >> 10) * 8 + 4, g = ((cell >> 5) & 31) * 8 + 4, b = (cell & 31) * 8 + 4;
    int best = 0, best_distance = 1 << 30;
    for (int i = 0; i < 256; ++i) {
      const int dr = r - palette_[3 * i], dg = g - palette_[3 * i + 1], db = b - palette_[3 * i + 2];
      const int distance = 3 * dr * dr + 4 * dg * dg + 2 * db * db;
      if (distance < best_distance) best = i, best_distance = distance;
    }
    nearest_[cell] = static_cast<std::uint8_t>(best);
  }
  const char* signature = "GIF89a";
  bytes_.assign(signature, signature + 6);
  put_u16(bytes_, width);
  put_u16(bytes_, height);
  bytes_.insert(bytes_.end(), {0xF7, 0, 0});  // global palette of 256 colours, 8 bits per channel
  bytes_.insert(bytes_.end(), palette_.begin(), palette_.end());
  const char* loop = "NETSCAPE2.0";  // the application extension that makes players loop
  bytes_.insert(bytes_.end(), {0x21, 0xFF, 11});
  bytes_.insert(bytes_.end(), loop, loop + 11);
  bytes_.insert(bytes_.end(), {3, 1, 0, 0, 0});
}

void GifEncoder::add_frame(const std::uint8_t* rgb) {
  const std::size_t pixels = static_cast<std::size_t>(width_) * height_;
  std::vector<std::uint8_t> indices(pixels);
  for (std::size_t i = 0; i < pixels; ++i)
    indices[i] = nearest_[((rgb[3 * i] >> 3) << 10) | ((rgb[3 * i + 1] >> 3) << 5) | (rgb[3 * i + 2] >> 3)];
  bytes_.insert(bytes_.end(), {0x21, 0xF9, 4, 0});  // graphic control: no transparency, the delay
  put_u16(bytes_, delay_);
  bytes_.insert(bytes_.end(), {0, 0, 0x2C, 0, 0, 0, 0});  // image descriptor at (0, 0)
  put_u16(bytes_, width_);
  put_u16(bytes_, height_);
  bytes_.push_back(0);  // no local palette, not interlaced
  lzw(indices);
  ++frames_;
}

// Variable-width LZW over 8-bit indices, codes of 9 to 12 bits, the table cleared when it is full.
// The table of strings is a hash from (prefix code, next index) to code, emptied by bumping a generation.
void GifEncoder::lzw(const std::vector<std::uint8_t>& indices) {
  constexpr int kClear = 256, kEnd = 257, kSlots = 1 << 13;
  struct Slot {
    std::uint32_t key;
    std::uint16_t code;
    std::uint32_t generation;
  };
  std::vector<Slot> table(kSlots, Slot{0, 0, 0});
  std::uint32_t generation = 1;
  BitPacker out;
  int code_size = 9, last_code = kEnd;
  out.put(kClear, code_size);
  int prefix = indices[0];
  for (std::size_t i = 1; i < indices.size(); ++i) {
    const int next = indices[i];
    const std::uint32_t key = (static_cast<std::uint32_t>(prefix) << 8) | static_cast<std::uint32_t>(next);
    std::uint32_t slot = (key * 2654435761u) >> 19;
    while (table[slot].generation == generation && table[slot].key != key) slot = (slot + 1) & (kSlots - 1);
    if (table[slot].generation == generation) {
      prefix = table[slot].code;
      continue;
    }
    out.put(prefix, code_size);
    table[slot] = {key, static_cast<std::uint16_t>(++last_code), generation};
    if (last_code >= (1 << code_size) && code_size < 12) ++code_size;
    if (last_code == 4095) {
      out.put(kClear, code_size);
      ++generation;
      code_size = 9, last_code = kEnd;
    }
    prefix = next;
  }
  out.put(prefix, code_size);
  out.put(kEnd, code_size);
  out.flush();
  bytes_.push_back(8);  // the LZW minimum code size
  for (std::size_t at = 0; at < out.bytes.size(); at += 255) {
    const std::size_t block = std::min<std::size_t>(255, out.bytes.size() - at);
    bytes_.push_back(static_cast<std::uint8_t>(block));
    bytes_.insert(bytes_.end(), out.bytes.begin() + static_cast<std::ptrdiff_t>(at),
                  out.bytes.begin() + static_cast<std::ptrdiff_t>(at + block));
  }
  bytes_.push_back(0);
}

std::vector<std::uint8_t> GifEncoder::finish() {
  bytes_.push_back(0x3B);
  return std::move(bytes_);
}

}  // namespace surge::video
