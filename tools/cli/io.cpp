#include "tools/cli/io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "sim/error.hpp"
#include "sim/format.hpp"
#include "tools/cli/args.hpp"

namespace surge::cli {

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) throw InputError("cannot write a file with an empty name");
  // A link is followed: the file it names is replaced, and the link stays. A device, FIFO or socket
  // (/dev/stdout, /dev/null, a pipe) is written through, as it cannot be replaced; a folder is refused.
  std::error_code error;
  const fs::file_status status = fs::status(path_, error);  // of what a link names
  if (fs::is_directory(status)) throw InputError("cannot write '" + path_ + "': it is a folder; give a file name");
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    if (fs::is_fifo(status)) {  // a FIFO no one reads would block the write for ever: say so instead
      const int probe = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (probe < 0)
        throw InputError("cannot write '" + path_ + "': it is a FIFO with no reader; start the reader first");
      ::close(probe);
    }
    direct_ = true;
    out_.open(path_, std::ios::out);
    if (!out_) throw InputError("cannot write '" + path_ + "': " + std::strerror(errno));
    return;
  }
  std::string target = path_;
  if (fs::is_symlink(fs::symlink_status(path_, error))) {
    if (!fs::exists(status))
      throw InputError("cannot write '" + path_ + "': it is a link to '" + fs::read_symlink(path_, error).string() +
                       "', which does not exist");
    target = fs::canonical(path_, error).string();
  }
  final_ = target;
  temporary_ = target + ".partial." + std::to_string(::getpid());
  out_.open(temporary_, std::ios::out | std::ios::trunc);
  if (!out_) throw InputError("cannot write '" + path_ + "': check that its folder exists and is writable");
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    if (!direct_) std::remove(temporary_.c_str());
  }
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (direct_) {
    if (!ok) throw InputError("could not finish writing '" + path_ + "': " + std::strerror(errno));
    committed_ = true;
    return;
  }
  if (!ok || std::rename(temporary_.c_str(), final_.c_str()) != 0) {
    const std::string reason = ok ? std::strerror(errno) : "the disk is full or the file could not be written";
    std::remove(temporary_.c_str());
    throw InputError("could not finish writing '" + path_ + "': " + reason);
  }
  committed_ = true;
}

void write_atomically(const std::string& path, const std::string& text) {
  AtomicFile file(path);
  file.stream() << text;
  file.commit();
}

void require_writable(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("cannot write " + what + " '': give a file name");
  const fs::path p(path);
  const fs::path folder = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError("cannot write " + what + " '" + path + "': folder '" + folder.string() + "' does not exist");
  if (fs::is_directory(p, ec)) throw InputError("cannot write " + what + " '" + path + "': it is a folder");
  if (::access(folder.c_str(), W_OK) != 0)
    throw InputError("cannot write " + what + " '" + path + "': folder '" + folder.string() + "' is not writable");
}

std::string read_text_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError("cannot read " + what + " '" + path + "': it is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in || !fs::is_regular_file(path, ec))
    throw InputError("cannot read " + what + " '" + path + "': no such file, or no permission to read it");
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec || size > kMaxTextFileBytes)
    throw InputError("cannot read " + what + " '" + path + "': it is larger than " + format_bytes(kMaxTextFileBytes));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {
std::vector<std::string> split_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) {
    // trim spaces and a trailing carriage return
    const auto first = cell.find_first_not_of(" \t\r");
    const auto last = cell.find_last_not_of(" \t\r");
    cells.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}
}  // namespace

int CsvTable::column(const std::string& name) const {
  for (std::size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int>(c);
  return -1;
}

CsvTable CsvTable::read(const std::string& path) {
  std::error_code ec;
  // A folder opens as an empty stream on Linux; say what it is instead of calling it empty.
  if (std::filesystem::is_directory(path, ec))
    throw InputError("cannot read '" + path + "': it is a folder, not a CSV file");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read '" + path + "': no such file, or no permission to read it");
  CsvTable table;
  table.path = path;
  std::string line;
  if (!std::getline(in, line)) throw InputError("'" + path + "' is empty: expected a CSV header row");
  // A UTF-8 byte order mark, which spreadsheet programs write, is not part of the first column's name.
  if (line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
  table.header = split_line(line);
  std::size_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines
    auto cells = split_line(line);
    if (cells.size() != table.header.size())
      throw InputError("'" + path + "' line " + std::to_string(line_number) + " has " + std::to_string(cells.size()) +
                       " cells but the header has " + std::to_string(table.header.size()));
    table.rows.push_back(std::move(cells));
  }
  return table;
}

double parse_cell(const CsvTable& table, std::size_t row, int column) {
  const std::string& text = table.rows[row][static_cast<std::size_t>(column)];
  const std::optional<double> value = parse_number_text(text);
  if (!value)
    throw InputError("'" + table.path + "' row " + std::to_string(row + 1) + ", column '" +
                     format_excerpt(table.header[column]) + "': '" + format_excerpt(text) +
                     "' is not a finite decimal number");
  return *value;
}

}  // namespace surge::cli
