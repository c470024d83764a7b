#include "tools/video/video_file.hpp"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "sim/error.hpp"

namespace surge::video {
namespace {

bool ends_with(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

bool ffmpeg_on_path() {
  const char* path = std::getenv("PATH");
  std::string folders = path ? path : "";
  std::size_t start = 0;
  while (start <= folders.size()) {
    const std::size_t end = std::min(folders.find(':', start), folders.size());
    const std::string folder = folders.substr(start, end - start);
    if (!folder.empty() && ::access((folder + "/ffmpeg").c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

// Shell-quoted: the path goes to ffmpeg through popen.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

void check_video_path(const std::string& path) {
  if (ends_with(path, ".gif")) return;
  if (!ends_with(path, ".mp4"))
    throw InputError("video file '" + path + "' is neither .gif nor .mp4; name it FILE.gif or FILE.mp4");
  if (!ffmpeg_on_path())
    throw InputError("video file '" + path +
                     "' needs the ffmpeg program for MP4 and none is on PATH; install ffmpeg or write FILE.gif");
}

VideoFile::VideoFile(std::string path, int width, int height, double frames_per_second)
    : path_(std::move(path)), width_(width), height_(height) {
  check_video_path(path_);
  const bool gif = ends_with(path_, ".gif");
  partial_ = path_ + ".partial" + (gif ? ".gif" : ".mp4");
  // Whether the file can be written is known before any frame is drawn.
  if (!std::ofstream(partial_, std::ios::binary))
    throw InputError("video file '" + path_ + "' cannot be written there; choose a folder you can write to");
  if (gif) {
    gif_ = std::make_unique<GifEncoder>(width, height, static_cast<int>(std::lround(100.0 / frames_per_second)));
    return;
  }
  // H.264 in yuv420p wants even sides: pad by a pixel where needed.
  const std::string command =
      "ffmpeg -hide_banner -loglevel error -y -f rawvideo -pix_fmt rgb24 -s " + std::to_string(width) + "x" +
      std::to_string(height) + " -r " + std::to_string(frames_per_second) +
      " -i - -vf 'pad=ceil(iw/2)*2:ceil(ih/2)*2' -pix_fmt yuv420p -c:v libx264 " +
      shell_quoted("file:" + std::filesystem::absolute(partial_).string());  // never read as an option or protocol
  // An ffmpeg that stops early must fail a write here, not end this process.
  std::signal(SIGPIPE, SIG_IGN);
  ffmpeg_ = ::popen(command.c_str(), "w");
  if (!ffmpeg_) throw Error("could not start ffmpeg for '" + path_ + "'");
}

VideoFile::~VideoFile() {
  if (ffmpeg_) ::pclose(ffmpeg_);
  std::error_code ignored;
  std::filesystem::remove(partial_, ignored);
}

void VideoFile::add(const std::uint8_t* rgb) {
  if (gif_) {
    gif_->add_frame(rgb);
  } else {
    const std::size_t bytes = static_cast<std::size_t>(width_) * height_ * 3;
    if (std::fwrite(rgb, 1, bytes, ffmpeg_) != bytes) throw Error("ffmpeg stopped taking frames for '" + path_ + "'");
  }
  ++frames_;
}

void VideoFile::close() {
  if (gif_) {
    const std::vector<std::uint8_t> bytes = gif_->finish();
    std::ofstream out(partial_, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw InputError("could not write video file '" + partial_ + "'; check the folder");
  } else {
    const int status = ::pclose(ffmpeg_);
    ffmpeg_ = nullptr;
    if (status != 0) throw Error("ffmpeg failed to write '" + path_ + "' (status " + std::to_string(status) + ")");
  }
  std::filesystem::rename(partial_, path_);
}

namespace {

struct Glyph {
  char c;
  const char* rows[5];
};

constexpr Glyph kFont[] = {
    {'0', {"###", "#.#", "#.#", "#.#", "###"}}, {'1', {".#.", "##.", ".#.", ".#.", "###"}},
    {'2', {"###", "..#", "###", "#..", "###"}}, {'3', {"###", "..#", "###", "..#", "###"}},
    {'4', {"#.#", "#.#", "###", "..#", "..#"}}, {'5', {"###", "#..", "###", "..#", "###"}},
    {'6', {"###", "#..", "###", "#.#", "###"}}, {'7', {"###", "..#", "..#", "..#", "..#"}},
    {'8', {"###", "#.#", "###", "#.#", "###"}}, {'9', {"###", "#.#", "###", "..#", "###"}},
    {'-', {"...", "...", "###", "...", "..."}}, {'.', {"...", "...", "...", "...", ".#."}},
    {' ', {"...", "...", "...", "...", "..."}}, {'R', {"##.", "#.#", "##.", "#.#", "#.#"}},
    {'E', {"###", "#..", "##.", "#..", "###"}}, {'T', {"###", ".#.", ".#.", ".#.", ".#."}},
    {'U', {"#.#", "#.#", "#.#", "#.#", "###"}}, {'N', {"##.", "#.#", "#.#", "#.#", "#.#"}},
    {'P', {"###", "#.#", "###", "#..", "#.."}}, {'I', {"###", ".#.", ".#.", ".#.", "###"}},
    {'S', {"###", "#..", "###", "..#", "###"}}, {'O', {"###", "#.#", "#.#", "#.#", "###"}},
    {'D', {"##.", "#.#", "#.#", "#.#", "##."}},
};

const Glyph* glyph(char c) {
  for (const Glyph& g : kFont)
    if (g.c == c) return &g;
  return nullptr;
}

}  // namespace

void draw_text(std::uint8_t* rgb, int width, int height, int x, int y, int scale, const std::string& text,
               const std::uint8_t colour[3]) {
  auto fill = [&](int left, int top, int w, int h, const std::uint8_t c[3]) {
    for (int row = std::max(top, 0); row < std::min(top + h, height); ++row)
      for (int column = std::max(left, 0); column < std::min(left + w, width); ++column)
        for (int k = 0; k < 3; ++k) rgb[(static_cast<std::size_t>(row) * width + column) * 3 + k] = c[k];
  };
  const std::uint8_t white[3] = {255, 255, 255};
  const int advance = 4 * scale;
  fill(x - scale, y - scale, advance * static_cast<int>(text.size()) + scale, 7 * scale, white);
  for (std::size_t i = 0; i < text.size(); ++i) {
    const Glyph* g = glyph(text[i]);
    if (!g) continue;
    for (int row = 0; row < 5; ++row)
      for (int column = 0; column < 3; ++column)
        if (g->rows[row][column] == '#')
          fill(x + advance * static_cast<int>(i) + column * scale, y + row * scale, scale, scale, colour);
  }
}

}  // namespace surge::video
