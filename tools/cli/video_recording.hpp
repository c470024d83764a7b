#pragma once
// Recording environments as a video: every captured step renders the first few environments of an
// engine, tiled in one frame, each with its episode's return in the top-left corner.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scenarios/scene_render.hpp"
#include "sim/engine.hpp"
#include "tools/cli/stop_signal.hpp"
#include "tools/video/video_file.hpp"

namespace surge::cli {

inline constexpr int kMaxVideoTiles = 16;

// "WxH" -> a size, each side 8 .. 4096; throws InputError naming the text and the form expected.
FrameSize parse_frame_size(const std::string& text);

// Frames per second of a scenario's video: Gymnasium's render_fps.
double video_fps(const std::string& scenario);

// Thrown by VideoRecording::capture after the first SIGINT or SIGTERM; finish_stopped() then closes the
// video with the frames drawn so far.
struct RecordingStopped {
  int signal_number;
};

class VideoRecording {
 public:
  // Shows environments 0 .. tiles-1 of a scenario, each drawn at `tile` (width 0: a size chosen so the
  // whole frame is about Gymnasium's size).
  VideoRecording(const std::string& path, const std::string& scenario, int tiles, FrameSize tile);
  // Draws the engine's current states; `returns` [tiles] is what each tile shows, and a tile whose
  // `frozen` flag is set keeps its previous picture (its episode has ended).
  void capture(Engine& engine, const std::vector<double>& returns, const std::vector<std::uint8_t>& frozen);
  void close() { file_->close(); }
  // After RecordingStopped: the video of the frames so far, a line on stderr ("COMMAND: stopped by
  // SIGTERM; ..."), and the exit code a shell expects after that signal. A second signal meanwhile is ignored.
  int finish_stopped(const RecordingStopped& stopped, const std::string& command, const std::string& path);
  int frames() const { return file_->frames(); }
  int width() const { return columns_ * tile_.width; }
  int height() const { return rows_ * tile_.height; }

 private:
  std::string scenario_;
  int tiles_, columns_, rows_;
  FrameSize tile_;
  std::vector<std::uint8_t> tile_pixels_, canvas_;
  std::unique_ptr<video::VideoFile> file_;
  StopSignals stop_;  // while recording, Ctrl-C or kill ends the video where it is, whole
};

}  // namespace surge::cli
