#pragma once
// What the `surge bench` commands share: --what, --mode, the command line a report records, and the
// report's --json and --svg files.
#include <functional>
#include <string>

#include "tools/cli/args.hpp"
#include "tools/cli/commands.hpp"

namespace surge::cli {

// --what: env (environment stepping) or train (PPO iterations).
std::string bench_what(const Command& cmd);

// --mode: fused (one launch steps T times) or step (one launch per step).
std::string bench_mode(const Command& cmd);

// "surge bench sweep --from 64 ...": `command` followed by its arguments.
std::string command_line(const std::string& command, const Args& args);

// Checks early that `path` can be created: its folder exists and is writable, and a file of that name can
// be opened there (a name too long, or a folder such as /proc that refuses new files, fails here and not
// after a long measurement). Throws InputError naming `what` and the path.
void require_creatable(const std::string& path, const std::string& what);

// --json FILE and --svg FILE: both checked creatable when read, so a long run does not fail at its end;
// both rendered before either is written, so a failure leaves neither behind.
class ReportFiles {
 public:
  explicit ReportFiles(const Command& cmd);
  // Renders and writes the files asked for; a renderer is called only when its file was.
  void write(const std::function<std::string()>& render_json, const std::function<std::string()>& render_svg) const;

 private:
  std::string json_path_, svg_path_;  // empty: not asked for
};

}  // namespace surge::cli
