#pragma once
// Animated GIF files from RGB frames: one fixed 256-colour palette made for the classic-control scenes
// (a grey ramp, ramps from white to each scene colour, and a coarse colour cube for anything else),
// each frame mapped to it by a 32 x 32 x 32 nearest-colour table and LZW-compressed; loops forever.
#include <cstdint>
#include <vector>

namespace surge::video {

class GifEncoder {
 public:
  GifEncoder(int width, int height, int delay_centiseconds);
  void add_frame(const std::uint8_t* rgb);  // [height][width][3]
  // The whole file; the encoder is spent afterwards.
  std::vector<std::uint8_t> finish();
  int frames() const { return frames_; }

 private:
  void lzw(const std::vector<std::uint8_t>& indices);

  int width_, height_, delay_, frames_ = 0;
  std::vector<std::uint8_t> palette_;  // [256][3]
  std::vector<std::uint8_t> nearest_;  // [32][32][32] palette index of each 5-bit colour cell
  std::vector<std::uint8_t> bytes_;
};

}  // namespace surge::video
