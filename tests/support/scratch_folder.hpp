#pragma once
// A fresh, empty folder for one test under the system's temporary directory, removed with its
// contents when the owner goes.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace surge::testing {

class ScratchFolder {
 public:
  // <temporary directory>/surge_test_<name>_<process id>_<count>: unique within the process and across
  // test programs running at the same time.
  explicit ScratchFolder(const std::string& name) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("surge_test_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;

  // The path of `file` in the folder, as text to put into a command line or an argument.
  std::string operator/(const std::string& file) const { return (path_ / file).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace surge::testing
