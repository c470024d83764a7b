#pragma once
// A training run's output folder: a new dated folder by default, owned for the whole run through an
// flock on DIR/.lock (a second run on the same folder is refused, naming the process that holds it), and
// refused when it already holds files unless the user asks to replace them (--overwrite) or to continue
// the run they belong to (--resume). Nothing is created before the caller has checked every input, and
// a run that fails before it starts takes the folders it created with it.
#include <cstdint>
#include <string>
#include <vector>

namespace surge::cli {

class RunFolder {
 public:
  enum class Reuse { Refuse, Overwrite, Resume };

  // `command` starts every error line ("surge train"). Creates `dir` (and missing parents), takes its
  // lock, and applies `reuse` to what is already there: Refuse throws InputError if anything but the
  // lock file is there, Overwrite removes the outputs a run writes (outputs()) and nothing else.
  RunFolder(std::string dir, Reuse reuse, const std::string& command);
  ~RunFolder();
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  // The run has started: its folder stays, whatever happens next.
  void keep() { kept_ = true; }
  const std::string& dir() const { return dir_; }

  // The files and folders a run writes into its folder.
  static const std::vector<std::string>& outputs();
  // runs/<scenario>/<YYYYmmdd-HHMMSS>-<tag>, with -2, -3, ... added if that folder already exists.
  static std::string default_dir(const std::string& scenario, const std::string& tag);
  // Throws InputError unless `dir` is missing or empty (the lock file aside), or `overwrite`.
  static void require_free(const std::string& dir, bool overwrite, const std::string& command);
  // Throws InputError if `path` names one of the outputs of a run in `dir` (as `what`, e.g. "--log-rollouts").
  static void require_not_an_output(const std::string& dir, const std::string& path, const std::string& what,
                                    const std::string& command);

 private:
  void release();  // unlocks, and removes what was created unless kept
  std::string dir_;
  std::string created_;       // the topmost folder this object created, removed if the run never started
  std::string lock_created_;  // the lock file, if this object created it
  int lock_fd_ = -1;
  bool kept_ = false;
};

}  // namespace surge::cli
