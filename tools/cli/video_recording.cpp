#include "tools/cli/video_recording.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/error.hpp"
#include "sim/memory.hpp"
#include "tools/cli/args.hpp"

namespace surge::cli {

namespace {

// A return as few characters as read well: "500", "-87", "-123.4".
std::string return_text(double value) {
  char text[32];
  const bool whole = std::fabs(value - std::round(value)) < 1e-6 || std::fabs(value) >= 1e4;
  std::snprintf(text, sizeof text, whole ? "%.0f" : "%.1f", value);
  return text;
}

}  // namespace

FrameSize parse_frame_size(const std::string& text) {
  const std::size_t x = text.find('x');
  const auto width = x == std::string::npos ? std::nullopt : parse_integer_text(text.substr(0, x));
  const auto height = x == std::string::npos ? std::nullopt : parse_integer_text(text.substr(x + 1));
  if (!width || !height || *width < 8 || *width > 4096 || *height < 8 || *height > 4096)
    throw InputError("frame size '" + text + "' is not WIDTHxHEIGHT with each side 8 to 4096, e.g. 84x84");
  return {static_cast<int>(*width), static_cast<int>(*height), 3};
}

double video_fps(const std::string& scenario) {
  if (scenario == "cartpole") return 50.0;
  if (scenario == "acrobot") return 15.0;
  return 30.0;  // MountainCar, MountainCarContinuous and Pendulum
}

VideoRecording::VideoRecording(const std::string& path, const std::string& scenario, int tiles, FrameSize tile)
    : scenario_(scenario), tiles_(tiles), tile_(tile) {
  SURGE_CHECK(tiles >= 1 && tiles <= kMaxVideoTiles, "bad tile count");
  columns_ = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(tiles))));
  rows_ = (tiles + columns_ - 1) / columns_;
  if (tile_.width == 0) {
    const FrameSize reference = reference_frame_size(scenario);
    tile_ = {std::max(64, reference.width / columns_), std::max(64, reference.height / columns_), tile.channels};
  }
  if (width() > 4096 || height() > 4096)
    throw InputError("a video frame of " + std::to_string(width()) + "x" + std::to_string(height()) + " (" +
                     std::to_string(tiles) + " tiles of " + std::to_string(tile_.width) + "x" +
                     std::to_string(tile_.height) + ") is over 4096 pixels a side; lower the size or the count");
  tile_pixels_.resize(static_cast<std::size_t>(tile_.width) * tile_.height * 3);
  canvas_.assign(static_cast<std::size_t>(width()) * height() * 3, 255);
  file_ = std::make_unique<video::VideoFile>(path, width(), height(), video_fps(scenario));
}

void VideoRecording::capture(Engine& engine, const std::vector<double>& returns,
                             const std::vector<std::uint8_t>& frozen) {
  if (stop_.requested()) throw RecordingStopped{stop_.signal_number()};
  Stream stream(engine.device());
  const std::vector<float> states = to_host(engine.states(), stream);
  const std::vector<double> params = params_to_host(engine, stream);
  const int state_dim = engine.spec().state_dim, param_count = engine.spec().param_count();
  const int scale = std::max(1, tile_.height / 80);
  const std::uint8_t ink[3] = {0, 0, 0};
  for (int i = 0; i < tiles_; ++i) {
    if (frozen[static_cast<std::size_t>(i)]) continue;
    render_states(scenario_, states.data() + static_cast<std::size_t>(i) * state_dim,
                  params.data() + static_cast<std::size_t>(i) * param_count, 1, tile_, tile_pixels_.data());
    if (tile_.channels == 1) {
      // A grey tile shown in an RGB video: each grey value in all three channels.
      for (std::size_t p = tile_pixels_.size() / 3; p-- > 0;) {
        const std::uint8_t grey = tile_pixels_[p];
        tile_pixels_[3 * p] = tile_pixels_[3 * p + 1] = tile_pixels_[3 * p + 2] = grey;
      }
    }
    const int left = (i % columns_) * tile_.width, top = (i / columns_) * tile_.height;
    for (int row = 0; row < tile_.height; ++row)
      std::copy_n(tile_pixels_.data() + static_cast<std::size_t>(row) * tile_.width * 3, tile_.width * 3,
                  canvas_.data() + (static_cast<std::size_t>(top + row) * width() + left) * 3);
  }
  // The return over every tile, a frozen one's too: its episode's last reward arrived with its end.
  for (int i = 0; i < tiles_; ++i) {
    std::string text = return_text(returns[static_cast<std::size_t>(i)]);
    text.resize(std::max<std::size_t>(text.size(), 6), ' ');  // covers a longer earlier text
    const int left = (i % columns_) * tile_.width, top = (i / columns_) * tile_.height;
    video::draw_text(canvas_.data(), width(), height(), left + 2 * scale, top + 2 * scale, scale, text, ink);
  }
  file_->add(canvas_.data());
}

int VideoRecording::finish_stopped(const RecordingStopped& stopped, const std::string& command,
                                   const std::string& path) {
  stop_.shield();
  close();
  std::fprintf(stderr, "%s: stopped by %s; the video holds the %d frames drawn before it -> %s\n", command.c_str(),
               StopSignals::name(stopped.signal_number), frames(), path.c_str());
  return StopSignals::exit_code(stopped.signal_number);
}

}  // namespace surge::cli
