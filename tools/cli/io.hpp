#pragma once
// Files the command line reads and writes. Outputs are written whole or not at all: into a
// temporary beside the target, renamed over it only once complete.
#include <cstddef>
#include <fstream>
#include <string>
#include <vector>

namespace surge::cli {

// A file written whole or not at all: into a temporary beside the target, renamed over it by commit().
// A link is followed (the file it names is replaced, the link stays); a device, FIFO or socket such as
// /dev/stdout is written straight through, since it cannot be replaced; a folder is refused.
class AtomicFile {
 public:
  // Throws InputError (naming the path) if the file cannot be created.
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ofstream& stream() { return out_; }
  void commit();  // flush, close and rename into place; throws on failure

 private:
  std::string path_, final_, temporary_;
  std::ofstream out_;
  bool committed_ = false;
  bool direct_ = false;  // written through: a device, FIFO or socket
};

// Writes `text` to `path` through an AtomicFile: the whole of it or nothing.
void write_atomically(const std::string& path, const std::string& text);

// The whole of a text file (a config), of at most kMaxTextFileBytes; throws InputError naming `what`
// and the path when it is a folder, missing, unreadable or larger.
inline constexpr std::size_t kMaxTextFileBytes = std::size_t(16) << 20;
std::string read_text_file(const std::string& path, const std::string& what);

// Checks early that `path` can be written, so a long run does not fail at its end.
void require_writable(const std::string& path, const std::string& what);

// A CSV file with a header row; every cell kept as text.
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // rows[k] is line k+2 of the file

  int column(const std::string& name) const;      // -1 if absent
  static CsvTable read(const std::string& path);  // throws InputError on an unreadable or ragged file
};

// Parses a whole cell as a finite number; throws InputError naming row and column otherwise.
double parse_cell(const CsvTable& table, std::size_t row, int column);

}  // namespace surge::cli
