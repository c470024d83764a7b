#pragma once
// PNG files from 8-bit RGB or grey pixels: filter 0 rows, deflated by zlib where the build has it and
// stored uncompressed otherwise (still a valid PNG).
#include <cstdint>
#include <string>
#include <vector>

namespace surge::video {

// The PNG encoding of a width x height image, rows top to bottom, `channels` 1 (grey) or 3 (RGB).
std::vector<std::uint8_t> encode_png(const std::uint8_t* pixels, int width, int height, int channels);

}  // namespace surge::video
