#pragma once
// A video file written frame by frame: .gif by Surge's own encoder, .mp4 by piping raw RGB frames to
// the ffmpeg program (H.264). Frames go to a temporary file beside the target, renamed into place by
// close(), so a failed or interrupted recording leaves nothing half-written under the target's name.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "tools/video/gif.hpp"

namespace surge::video {

// Throws InputError (naming `path` and the way out) when the extension is neither .gif nor .mp4, or
// when it is .mp4 and no ffmpeg program is on PATH.
void check_video_path(const std::string& path);

class VideoFile {
 public:
  VideoFile(std::string path, int width, int height, double frames_per_second);
  ~VideoFile();
  VideoFile(const VideoFile&) = delete;
  VideoFile& operator=(const VideoFile&) = delete;

  void add(const std::uint8_t* rgb);  // [height][width][3]
  void close();
  int frames() const { return frames_; }

 private:
  std::string path_, partial_;
  int width_, height_, frames_ = 0;
  std::unique_ptr<GifEncoder> gif_;
  std::FILE* ffmpeg_ = nullptr;
};

// Writes `text` (digits, '-', '.', ' ' and the letters of "RETURN EPISODE") at (x, y), its top left
// corner, into an RGB frame: a 3 x 5 pixel font scaled by `scale`, clipped to the frame, in `colour`
// on a white box one font pixel wider all round so it reads over any scene.
void draw_text(std::uint8_t* rgb, int width, int height, int x, int y, int scale, const std::string& text,
               const std::uint8_t colour[3]);

}  // namespace surge::video
